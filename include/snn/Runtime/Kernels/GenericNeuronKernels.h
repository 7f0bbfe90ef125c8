//===- GenericNeuronKernels.h - Any described neuron, fused over T -*- C++ -*-===//
//
// Runs a neuron described by its parts (schema::NeuronProgram) without a
// kernel of its own: a small evaluator walks the compiled step over blocks of
// elements (each instruction one vectorisable loop over the block, the block's
// registers in L1), all T steps per block, forward; the backward recomputes
// each step from the saved states and sweeps the step's instructions in
// reverse (reverse-mode differentiation of the step), carrying dL/dstate
// across steps. Fire is Heaviside forward and the neuron's surrogate backward.
//
// Registers that vary with neither the input nor a state (functions of the
// operands, such as PLIF's sigmoid(w)) are computed by the caller with tensor
// ops, so PyTorch's own kernels round them and autograd differentiates them;
// the kernels take them as "uniforms" and return their gradients.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_KERNELS_GENERICNEURONKERNELS_H
#define SNN_RUNTIME_KERNELS_GENERICNEURONKERNELS_H

#include "snn/Runtime/Kernels/NeuronKernels.h"
#include "snn/Schema/NeuronProgram.h"

#include <ATen/core/Tensor.h>

#include <memory>
#include <vector>

namespace snn::runtime {

/// A compiled neuron with its surrogate, ready to run.
class GenericNeuron {
public:
  /// `program` must come from schema::compileNeuron without error.
  GenericNeuron(schema::NeuronProgram program, std::vector<double> stateInit, Surrogate surrogate,
                float alpha, float beta);

  const schema::NeuronProgram &program() const { return program_; }
  const std::vector<double> &stateInit() const { return stateInit_; }
  Surrogate surrogate() const { return surrogate_; }
  float alpha() const { return alpha_; }
  float beta() const { return beta_; }
  size_t stateCount() const { return stateInit_.size(); }

  /// The registers the kernels read as uniforms, in the order of the
  /// `uniforms` arguments below: operand-only values a varying instruction reads.
  const std::vector<int32_t> &uniformRegisters() const { return uniformRegisters_; }

  /// The uniforms from the operands (each [], [C], [T] or [T, C], float32 or
  /// float64 like the input), computed with ATen ops in the program's order,
  /// so autograd differentiates them when the operands require grad.
  std::vector<at::Tensor> evaluateUniforms(const std::vector<at::Tensor> &operands) const;

private:
  schema::NeuronProgram program_;
  std::vector<double> stateInit_;
  Surrogate surrogate_;
  float alpha_, beta_;
  std::vector<int32_t> uniformRegisters_;
};

/// Instruction `in` (an operand read or an arithmetic or function instruction, not Input,
/// State, Const, Fire or spike_count) with ATen ops on the registers `values`, as PyTorch
/// evaluates the Python expression: a constant on either side is a Scalar. A per-step [T]
/// operand is read as [T, 1].
at::Tensor evaluateInstruction(const schema::NeuronProgram &p, const schema::NeuronInstr &in,
                               const std::vector<at::Tensor> &values,
                               const std::vector<at::Tensor> &operands);

struct GenericNeuronForwardResult {
  at::Tensor output; ///< x's shape
  /// Each state's value at the start of every step, [S, T, ...] (when saved).
  at::Tensor states;
  int64_t fired = 0; ///< spikes of the fire rule (0 for a neuron without one)
};

/// Runs `neuron` over dim 0 of `x` ([T, N, ...]; channels, for per-channel
/// uniforms, are dim 2). `uniforms` as GenericNeuron::uniformRegisters() says,
/// each [], [C], [T] or [T, C].
GenericNeuronForwardResult genericNeuronForward(const GenericNeuron &neuron, const at::Tensor &x,
                                                const std::vector<at::Tensor> &uniforms,
                                                bool saveStates);

struct GenericNeuronBackwardResult {
  at::Tensor gradX;
  /// dL/d of each uniform, in its shape.
  std::vector<at::Tensor> gradUniforms;
};

/// BPTT from dL/doutput, the forward's input and its saved states.
/// Deterministic: reductions sum fixed blocks in a fixed order.
GenericNeuronBackwardResult genericNeuronBackward(const GenericNeuron &neuron,
                                                  const at::Tensor &gradOutput, const at::Tensor &x,
                                                  const at::Tensor &states,
                                                  const std::vector<at::Tensor> &uniforms);

} // namespace snn::runtime

#endif // SNN_RUNTIME_KERNELS_GENERICNEURONKERNELS_H
