//===- NeuronProgram.h - A neuron described by its parts --------*- C++ -*-===//
//
// A stateful neuron is described by its parts rather than by a kind name: its
// state variables and their initial values, named constants, operands
// (learnable or per-channel tensors), a charge step, a fire rule, a reset rule,
// updates after the reset, and what it outputs. The charge, updates and output
// are statements of a small expression language (docs/neuron-programs.md):
//
//   statement  := name '=' expression
//   expression := term (('+' | '-') term)*
//   term       := unary (('*' | '/') unary)*
//   unary      := '-' unary | primary
//   primary    := number | name | function '(' expression ')' | '(' expression ')'
//   function   := exp | sigmoid | relu | tanh | detach
//   primary    := 'spike_count' '(' expression ',' D ',' lo ',' hi ')'
//
// spike_count is a multi-level spike: round(clamp(a, 0, D)) forward (half to
// even, as torch.round), and the gradient passed straight through where
// lo <= a <= hi (D, lo, hi constants).
//
// evaluated left to right in float32 as PyTorch evaluates the same Python
// expression: an operation on two constants is folded in double (Python
// floats), every other one rounds to float32. One step, in order:
//
//   1. `charge` statements (they must assign `h`, the pre-fire potential);
//   2. `s` = Heaviside(`fire`) forward, the surrogate of `fire` backward
//      (no `fire`: the neuron does not spike and `s` is undefined);
//   3. the reset assigns the first state (the membrane) from `h`:
//      hard  v = sd * v_reset + (1 - sd) * h
//      soft  v = h - sd * v_threshold
//      none  v = h
//      with sd = detach(s) when detach_reset, else s;
//   4. `update` statements;
//   5. the step's output is `output`.
//
// Reading a state before it is assigned in the step reads its value from the
// step before; every state's last assignment is its value for the next step.
// Plain C++: the compiler's verifier and importer and the runtime share it.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_SCHEMA_NEURONPROGRAM_H
#define SNN_SCHEMA_NEURONPROGRAM_H

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace snn::schema {

enum class ResetRule { Hard, Soft, None };

/// `hard`, `soft`, `none`.
const char *resetRuleName(ResetRule rule);
/// The rule spelled `name`, false when there is none.
bool parseResetRule(std::string_view name, ResetRule &rule);

/// A neuron by its parts, as the ONNX profile, the dialect and the artifact
/// carry it.
struct NeuronDescription {
  /// State variables; the first is the membrane the reset writes.
  std::vector<std::string> states;
  /// Each state's value before the first step.
  std::vector<double> stateInit;
  /// Named constants (Python floats in the model).
  std::vector<std::pair<std::string, double>> constants;
  /// Named tensor operands after the input, in operand order: learnable
  /// parameters or per-channel values, [] or [C]; or, where the operand is
  /// per step, [T] or [T, C].
  std::vector<std::string> operands;
  /// Whether each operand is per step (spelled `name[t]` in the attribute).
  std::vector<bool> operandPerStep;
  std::vector<std::string> charge;
  /// The distance to the threshold; empty for a neuron that does not fire.
  std::string fire;
  ResetRule reset = ResetRule::Hard;
  bool detachReset = false;
  std::vector<std::string> update;
  std::string output = "s";
};

/// A described neuron's attributes, spelled alike in the ONNX profile's `Neuron`
/// node, the dialect's `snn.neuron` and the artifact's `neuron` node. States and
/// constants are "name=value" strings: the value is a double written in full
/// (Python's repr), so no float32 attribute rounds a constant before Python would.
namespace neuron_attr {
inline constexpr const char *kStates = "states";          ///< "name=initial value", membrane first
inline constexpr const char *kConstants = "constants";    ///< "name=value"
inline constexpr const char *kOperands = "operand_names"; ///< names of inputs 1, 2, ...
                                                          ///< (`name[t]`: per step)
inline constexpr const char *kCharge = "charge";          ///< statements
inline constexpr const char *kFire = "fire";              ///< expression; absent: no fire
inline constexpr const char *kReset = "reset";            ///< hard, soft or none
inline constexpr const char *kUpdate = "update";          ///< statements
inline constexpr const char *kOutput = "output";          ///< expression
} // namespace neuron_attr

/// The parts as those attributes hold them.
struct NeuronParts {
  std::vector<std::string> states, constants, operands, charge, update;
  std::string fire, reset = "hard", output = "s";
  bool detachReset = false;
};

/// The description the parts spell, or a one-line error naming the attribute.
struct NeuronDescriptionResult {
  NeuronDescription description;
  std::string error;
};
NeuronDescriptionResult describeNeuron(const NeuronParts &parts);

/// An operand spelled `name[t]` in `operand_names` is indexed by step ([T] or
/// [T, C]); returns the name without the mark and whether it had it.
std::pair<std::string, bool> parseOperandName(std::string_view spelled);

/// "name=value" with the value written so that it reads back exactly.
std::string formatNamedValue(const std::string &name, double value);

enum class NeuronOp : uint8_t {
  Const,   ///< value
  Input,   ///< x of the step
  State,   ///< a state's value from the step before (index)
  Operand, ///< an operand (index)
  Add,
  Sub,
  Mul,
  Div,
  Neg,
  Exp,
  Sigmoid,
  Relu,
  Tanh,
  Fire,   ///< Heaviside(a) forward, surrogate(a) backward
  Detach, ///< a forward, no gradient
  /// round(clamp(a, 0, index)) forward; backward passes the gradient where
  /// value <= a <= upper.
  SpikeCount,
};

/// The operation's name in the language (`+`, `exp`, `fire`, ...).
const char *neuronOpName(NeuronOp op);

/// One instruction; instruction i defines register i (SSA).
struct NeuronInstr {
  NeuronOp op = NeuronOp::Const;
  int32_t a = -1, b = -1; ///< operand registers
  int32_t index = -1;     ///< State: the state; Operand: the operand
  double value = 0.0;     ///< Const; SpikeCount: the gradient window's low end
  double upper = 0.0;     ///< SpikeCount: the gradient window's high end
};

/// A description compiled to one straight-line step. Registers that depend
/// on neither the input nor a state (`varies` false) are the same for every
/// element of a step: the runtime computes them once, with tensor ops.
struct NeuronProgram {
  std::vector<NeuronInstr> code;
  std::vector<bool> varies;
  int32_t input = -1;
  /// The State instruction of each state (-1 for a state never read).
  std::vector<int32_t> stateRead;
  /// The register holding each state's value for the next step.
  std::vector<int32_t> stateNext;
  /// The Fire instruction, -1 for a neuron that does not fire.
  int32_t fire = -1;
  /// The register whose nonzero elements are the step's spikes, for firing
  /// rates: the Fire instruction, else an output that is a spike_count; -1
  /// for a neuron that does not spike.
  int32_t spikes = -1;
  int32_t output = -1;
  /// The Operand instruction of each operand (-1 for one never read).
  std::vector<int32_t> operandRead;
  std::vector<std::string> stateNames;
  std::vector<std::string> operandNames;
  std::vector<bool> operandPerStep;

  /// Register `r` as an expression (canonical: fully parenthesised, constants
  /// printed exactly), for diagnostics and for matching known neurons.
  std::string print(int32_t r) const;
};

/// Compiles `description`, or returns a one-line error naming the part and
/// the statement at fault.
struct NeuronCompileResult {
  NeuronProgram program;
  std::string error;
};
NeuronCompileResult compileNeuron(const NeuronDescription &description);

/// Why a neuron of `program` cannot run fed back its own output (a recurrent neuron, whose
/// steps the runtime evaluates with tensor ops), or empty.
std::string recurrentProgramError(const NeuronProgram &program);

} // namespace snn::schema

#endif // SNN_SCHEMA_NEURONPROGRAM_H
