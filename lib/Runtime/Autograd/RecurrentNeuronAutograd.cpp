//===- RecurrentNeuronAutograd.cpp - A neuron fed back its own output -----===//

#include "snn/Runtime/Autograd/RecurrentNeuronAutograd.h"

#include "snn/Runtime/Autograd/SurrogateSpikeAutograd.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/TensorIO.h"

#include <ATen/ATen.h>

namespace snn::runtime {

using schema::NeuronInstr;
using schema::NeuronOp;
using schema::NeuronProgram;

namespace {

/// The operands step `t` reads: a per-step [T] one as its 0-d value, a [T, F] one as [F].
std::vector<at::Tensor> operandsAt(const NeuronProgram &p, const std::vector<at::Tensor> &operands,
                                   int64_t t) {
  std::vector<at::Tensor> out;
  for (size_t i = 0; i < operands.size(); ++i) {
    const at::Tensor &operand = operands[i];
    bool perStep = operand.dim() == 2 || (p.operandPerStep[i] && operand.dim() == 1);
    out.push_back(perStep ? operand.select(0, t) : operand);
  }
  return out;
}

/// Register `r` as a tensor of the step's shape (a constant one filled with its value).
at::Tensor tensorOf(const NeuronProgram &p, const std::vector<at::Tensor> &values, int32_t r,
                    const at::Tensor &like) {
  if (values[size_t(r)].defined())
    return values[size_t(r)];
  return at::full_like(like, p.code[size_t(r)].value);
}

/// One step: every register from the step's input, the states of the step before and the
/// operands; the states move to their next values.
at::Tensor evaluateStep(const GenericNeuron &neuron, const at::Tensor &input,
                        std::vector<at::Tensor> &states, const std::vector<at::Tensor> &operands,
                        at::Tensor &spikes) {
  const NeuronProgram &p = neuron.program();
  SpikeSurrogate surrogate{neuron.surrogate(), neuron.alpha(), neuron.beta()};
  std::vector<at::Tensor> values(p.code.size());
  for (size_t r = 0; r < p.code.size(); ++r) {
    const NeuronInstr &in = p.code[r];
    switch (in.op) {
    case NeuronOp::Const: break; // read as a Scalar by the instructions that use it
    case NeuronOp::Input: values[r] = input; break;
    case NeuronOp::State: values[r] = states[size_t(in.index)]; break;
    case NeuronOp::Fire:
      values[r] = surrogateSpikeWithGrad(tensorOf(p, values, in.a, input), surrogate);
      break;
    default: values[r] = evaluateInstruction(p, in, values, operands);
    }
  }
  for (size_t i = 0; i < states.size(); ++i)
    states[i] = tensorOf(p, values, p.stateNext[i], input);
  if (p.spikes >= 0)
    spikes = tensorOf(p, values, p.spikes, input);
  return tensorOf(p, values, p.output, input);
}

} // namespace

RecurrentNeuronResult recurrentNeuronSteps(const GenericNeuron &neuron, const at::Tensor &x,
                                           const at::Tensor &weight, const at::Tensor &bias,
                                           const std::vector<at::Tensor> &operands) {
  if (x.dim() != 3)
    throw Error("expects a [T, N, F] input, got " + formatShape(x.sizes()));
  int64_t features = x.size(2);
  if (weight.dim() != 2 || weight.size(0) != features || weight.size(1) != features ||
      bias.dim() != 1 || bias.size(0) != features)
    throw Error("the recurrent weight " + formatShape(weight.sizes()) + " and bias " +
                formatShape(bias.sizes()) + " do not fit the input " + formatShape(x.sizes()));
  if (operands.size() != neuron.program().operandNames.size())
    throw Error("neuron: " + std::to_string(neuron.program().operandNames.size()) +
                " operands expected, got " + std::to_string(operands.size()));
  at::Tensor first = x.select(0, 0);
  std::vector<at::Tensor> states;
  for (double init : neuron.stateInit())
    states.push_back(at::full_like(first, init));
  at::Tensor fedBack = at::zeros_like(first);
  std::vector<at::Tensor> outputs;
  RecurrentNeuronResult result;
  for (int64_t t = 0; t < x.size(0); ++t) {
    at::Tensor input = at::add(x.select(0, t), at::linear(fedBack, weight, bias));
    at::Tensor spikes;
    fedBack =
        evaluateStep(neuron, input, states, operandsAt(neuron.program(), operands, t), spikes);
    if (spikes.defined())
      result.fired += spikes.detach().count_nonzero().item<int64_t>();
    outputs.push_back(fedBack);
  }
  result.output = at::stack(outputs);
  return result;
}

} // namespace snn::runtime
