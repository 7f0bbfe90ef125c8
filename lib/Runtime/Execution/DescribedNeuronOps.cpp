//===- DescribedNeuronOps.cpp - neuron, recurrent_neuron: described neurons -===//
//
// Compiles the node's description once at build time (schema::compileNeuron)
// and runs it through the neuron program evaluator on every call; a
// recurrent_neuron steps it one step at a time with its feedback.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Autograd/GenericNeuronAutograd.h"
#include "snn/Runtime/Autograd/RecurrentNeuronAutograd.h"
#include "snn/Runtime/Execution/FiringCounts.h"
#include "snn/Runtime/Execution/NodeAttributes.h"
#include "snn/Runtime/Execution/OpRegistry.h"
#include "snn/Runtime/Execution/SurrogateAttributes.h"
#include "snn/Runtime/Kernels/GenericNeuronKernels.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/TensorIO.h"
#include "snn/Schema/ArtifactOps.h"
#include "snn/Schema/NeuronProgram.h"

#include <c10/core/GradMode.h>

namespace snn::runtime {

namespace attr = schema::attr;

namespace {

/// The node's neuron, compiled; errors name the node. The description's operands follow
/// `leadingInputs` inputs (the neuron's input, and a recurrent neuron's weight and bias).
std::shared_ptr<const GenericNeuron> compileNode(const Node &node, size_t leadingInputs) {
  NodeAttributes attributes(node);
  schema::NeuronParts parts;
  parts.states = attributes.getStrings(schema::neuron_attr::kStates);
  parts.constants = attributes.getStrings(schema::neuron_attr::kConstants);
  parts.operands = attributes.getStrings(schema::neuron_attr::kOperands);
  parts.charge = attributes.getStrings(schema::neuron_attr::kCharge);
  parts.update = attributes.getStrings(schema::neuron_attr::kUpdate);
  parts.fire = attributes.getString(schema::neuron_attr::kFire, "");
  parts.reset = attributes.getString(schema::neuron_attr::kReset, "hard");
  parts.output = attributes.getString(schema::neuron_attr::kOutput, "s");
  parts.detachReset = attributes.getBool(attr::kDetachReset, false);
  schema::NeuronDescriptionResult described = schema::describeNeuron(parts);
  if (!described.error.empty())
    attributes.fail(described.error);
  if (parts.operands.size() + leadingInputs != node.inputs.size())
    attributes.fail(std::to_string(parts.operands.size()) + " operand names for " +
                    std::to_string(node.inputs.size() - leadingInputs) + " operand inputs");
  schema::NeuronCompileResult compiled = schema::compileNeuron(described.description);
  if (!compiled.error.empty())
    attributes.fail(compiled.error);

  SpikeSurrogate surrogate = readSurrogate(attributes, "sigmoid");
  return std::make_shared<const GenericNeuron>(std::move(compiled.program),
                                               described.description.stateInit, surrogate.kind,
                                               surrogate.alpha, surrogate.beta);
}

Kernel buildDescribedNeuron(const Node &node) {
  std::shared_ptr<const GenericNeuron> neuron = compileNode(node, 1);
  return [neuron, layer = node.name](const std::vector<at::Tensor> &in, const RunContext &context) {
    if (in[0].dim() < 2)
      throw Error("expects a [T, N, ...] input, got " + formatShape(in[0].sizes()));
    std::vector<at::Tensor> operands(in.begin() + 1, in.end());
    bool wantsGrad = in[0].requires_grad();
    for (const at::Tensor &operand : operands)
      wantsGrad = wantsGrad || operand.requires_grad();
    int64_t fired = 0;
    at::Tensor out;
    if (c10::GradMode::is_enabled() && wantsGrad) {
      out = genericNeuronWithGrad(neuron, in[0], operands, &fired);
    } else {
      GenericNeuronForwardResult result =
          genericNeuronForward(*neuron, in[0], neuron->evaluateUniforms(operands), false);
      fired = result.fired;
      out = result.output;
    }
    if (context.firing && !context.keepRunningStatistics && neuron->program().spikes >= 0)
      context.firing->add(layer, fired, out.numel(), "neuron (described)");
    return out;
  };
}

Kernel buildRecurrentNeuron(const Node &node) {
  std::shared_ptr<const GenericNeuron> neuron = compileNode(node, 3);
  if (std::string error = schema::recurrentProgramError(neuron->program()); !error.empty())
    NodeAttributes(node).fail(error);
  return [neuron, layer = node.name](const std::vector<at::Tensor> &in, const RunContext &context) {
    std::vector<at::Tensor> operands(in.begin() + 3, in.end());
    RecurrentNeuronResult result = recurrentNeuronSteps(*neuron, in[0], in[1], in[2], operands);
    if (context.firing && !context.keepRunningStatistics && neuron->program().spikes >= 0)
      context.firing->add(layer, result.fired, result.output.numel(), "neuron (recurrent)");
    return result.output;
  };
}

} // namespace

void registerDescribedNeuronOps(OpRegistry &registry) {
  registry.add(schema::op::kNeuron, buildDescribedNeuron);
  registry.add(schema::op::kRecurrentNeuron, buildRecurrentNeuron);
}

} // namespace snn::runtime
