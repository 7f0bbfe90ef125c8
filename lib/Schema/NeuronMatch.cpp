//===- NeuronMatch.cpp - Described neurons that are IF, LIF or PLIF -------===//
#include "snn/Schema/NeuronMatch.h"

#include <cmath>
#include <map>

namespace snn::schema {

namespace {

/// The names of the parameters a template leaves open.
constexpr const char *kThreshold = "v_threshold", *kReset = "v_reset", *kTau = "tau";

struct Shape {
  KnownNeuronKind kind;
  bool decayInput, hard, detach;
};

/// The neuron's description; with `open`, its parameters are operands (placeholders that
/// do not fold) instead of constants.
NeuronDescription describe(const Shape &shape, const KnownNeuron &values, bool open) {
  NeuronDescription d;
  d.states = {"v"};
  d.stateInit = {shape.hard && values.vReset ? *values.vReset : 0.0};
  if (shape.kind == KnownNeuronKind::PLIF)
    d.operands = {"w"};
  // A soft reset charges with V_reset = 0 (docs/semantics.md).
  double reset = shape.hard && values.vReset ? *values.vReset : 0.0;
  std::vector<std::pair<std::string, double>> named = {
      {kThreshold, values.vThreshold}, {kReset, reset}, {kTau, values.tau}};
  for (const auto &[name, value] : named)
    if (open)
      d.operands.push_back(name);
    else
      d.constants.push_back({name, value});
  d.operandPerStep.assign(d.operands.size(), false);
  const char *leak = shape.kind == KnownNeuronKind::PLIF ? " * sigmoid(w)" : " / tau";
  if (shape.kind == KnownNeuronKind::IF)
    d.charge = {"h = v + x"};
  else if (shape.decayInput)
    d.charge = {std::string("h = v + (x - (v - v_reset))") + leak};
  else
    d.charge = {std::string("h = v - (v - v_reset)") + leak + " + x"};
  d.fire = "h - v_threshold";
  d.reset = shape.hard ? ResetRule::Hard : ResetRule::Soft;
  d.detachReset = shape.detach;
  return d;
}

/// Unifies register `t` of a template with register `c` of a candidate: the same
/// operations on the same leaves, a placeholder standing for one constant throughout.
class Unifier {
public:
  Unifier(const NeuronProgram &tmpl, const NeuronProgram &cand) : t_(tmpl), c_(cand) {}

  bool unify(int32_t t, int32_t c) {
    if ((t < 0) != (c < 0))
      return false;
    if (t < 0)
      return true;
    const NeuronInstr &ti = t_.code[size_t(t)], &ci = c_.code[size_t(c)];
    if (ti.op == NeuronOp::Operand && t_.operandNames[size_t(ti.index)] != "w")
      return bind(t_.operandNames[size_t(ti.index)], ci);
    if (ti.op != ci.op)
      return false;
    switch (ti.op) {
    case NeuronOp::Const:
      return ti.value == ci.value;
    case NeuronOp::State:
    case NeuronOp::Operand: // PLIF's w: the candidate's only operand
      return ti.index == ci.index;
    case NeuronOp::Input:
      return true;
    default:
      return unify(ti.a, ci.a) && unify(ti.b, ci.b);
    }
  }

  std::optional<double> value(const std::string &name) const {
    auto it = bound_.find(name);
    return it == bound_.end() ? std::nullopt : std::optional<double>(it->second);
  }

private:
  bool bind(const std::string &name, const NeuronInstr &ci) {
    if (ci.op != NeuronOp::Const || !std::isfinite(ci.value))
      return false;
    auto [it, fresh] = bound_.emplace(name, ci.value);
    return fresh || it->second == ci.value;
  }

  const NeuronProgram &t_, &c_;
  std::map<std::string, double> bound_;
};

/// `candidate` as the neuron of `shape`, if it is one.
std::optional<KnownNeuron> matchShape(const Shape &shape, const NeuronDescription &candidate,
                                      const NeuronProgram &cand) {
  NeuronCompileResult tmpl = compileNeuron(describe(shape, KnownNeuron{}, /*open=*/true));
  if (!tmpl.error.empty())
    return std::nullopt;
  const NeuronProgram &t = tmpl.program;
  Unifier u(t, cand);
  if (!u.unify(t.fire, cand.fire) || !u.unify(t.stateNext[0], cand.stateNext[0]))
    return std::nullopt;
  KnownNeuron known;
  known.kind = shape.kind;
  known.decayInput = shape.decayInput;
  known.detachReset = shape.detach;
  known.vThreshold = *u.value(kThreshold);
  std::optional<double> reset = u.value(kReset);
  if (shape.hard)
    known.vReset = reset;
  else if (reset && *reset != 0.0)
    return std::nullopt;
  double init = shape.hard ? *known.vReset : 0.0;
  if (candidate.stateInit[0] != init)
    return std::nullopt;
  if (shape.kind == KnownNeuronKind::LIF) {
    known.tau = *u.value(kTau);
    if (!(known.tau > 1.0))
      return std::nullopt;
  }
  return known;
}

} // namespace

NeuronDescription describeKnownNeuron(const KnownNeuron &neuron) {
  Shape shape{neuron.kind, neuron.decayInput, neuron.vReset.has_value(), neuron.detachReset};
  return describe(shape, neuron, /*open=*/false);
}

std::optional<KnownNeuron> matchKnownNeuron(const NeuronDescription &description) {
  if (description.states.size() != 1 || description.operands.size() > 1)
    return std::nullopt;
  NeuronCompileResult compiled = compileNeuron(description);
  const NeuronProgram &p = compiled.program;
  if (!compiled.error.empty() || p.fire < 0 || p.output != p.fire)
    return std::nullopt;
  bool plif = p.operandNames.size() == 1;
  if (plif && p.operandPerStep[0])
    return std::nullopt;
  std::vector<KnownNeuronKind> kinds = {KnownNeuronKind::IF, KnownNeuronKind::LIF};
  if (plif)
    kinds = {KnownNeuronKind::PLIF};
  for (KnownNeuronKind kind : kinds)
    for (bool decayInput : {true, false}) {
      if (kind == KnownNeuronKind::IF && !decayInput)
        continue;
      for (bool hard : {true, false})
        for (bool detach : {false, true})
          if (std::optional<KnownNeuron> known =
                  matchShape({kind, decayInput, hard, detach}, description, p))
            return known;
    }
  return std::nullopt;
}

} // namespace snn::schema
