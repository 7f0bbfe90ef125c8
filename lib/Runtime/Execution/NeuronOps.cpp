//===- NeuronOps.cpp - if_node, lif_node, plif_node -----------------------===//
//
// Reads the neuron attributes once at build time and runs the fused kernel of
// NeuronKernels.cpp on every call.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Autograd/NeuronAutograd.h"
#include "snn/Runtime/Execution/FiringCounts.h"
#include "snn/Runtime/Execution/LayerAttributes.h"
#include "snn/Runtime/Execution/NodeAttributes.h"
#include "snn/Runtime/Execution/OpRegistry.h"
#include "snn/Runtime/Execution/SurrogateAttributes.h"
#include "snn/Runtime/Kernels/NeuronKernels.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/TensorIO.h"
#include "snn/Schema/ArtifactOps.h"

#include <c10/core/GradMode.h>

#include <cmath>
#include <limits>

namespace snn::runtime {

namespace attr = schema::attr;
namespace op = schema::op;

namespace {

using Inputs = std::vector<at::Tensor>;

/// The attributes every neuron has (SpikingJelly's defaults when absent).
NeuronConfig parseCommon(const Node &node, NeuronKind kind) {
  NodeAttributes attributes(node);
  NeuronConfig config;
  config.kind = kind;
  config.vThreshold = attributes.getFloat(attr::kVThreshold, 1.0f);
  // A missing v_reset means soft reset (SpikingJelly's v_reset=None).
  std::optional<float> vReset = attributes.findFloat(attr::kVReset);
  config.hardReset = vReset.has_value();
  config.vReset = vReset.value_or(0.0f);
  config.detachReset = attributes.getBool(attr::kDetachReset, false);
  SpikeSurrogate surrogate = readSurrogate(attributes, "sigmoid");
  config.surrogate = surrogate.kind;
  config.alpha = surrogate.alpha;
  config.beta = surrogate.beta;
  if (!std::isfinite(config.vThreshold) || !std::isfinite(config.vReset))
    attributes.fail("v_threshold and v_reset must be finite");
  if (kind != NeuronKind::IF)
    config.decayInput = attributes.getBool(attr::kDecayInput, true);
  return config;
}

void requireSpikeInput(const at::Tensor &x) {
  if (x.dim() < 2)
    throw Error("expects a [T, N, ...] input, got " + formatShape(x.sizes()));
}

/// The autograd Function when a graph is being recorded and something needs
/// a gradient; otherwise the raw kernel, which saves nothing. `fired`
/// receives the number of spikes.
at::Tensor spikes(const at::Tensor &x, const at::Tensor &w,
                  const NeuronConfig &config, int64_t &fired) {
  requireSpikeInput(x);
  bool plif = config.kind == NeuronKind::PLIF;
  bool wantsGrad = x.requires_grad() || (plif && w.requires_grad());
  if (c10::GradMode::is_enabled() && wantsGrad)
    return neuronSpikesWithGrad(x, w, config, &fired);
  // w may change between runs (training), so k is computed per call.
  NeuronForwardResult result = neuronForward(x, config, plif ? plifDecay(w) : 0.0);
  fired = result.fired;
  return result.spikes;
}

Kernel buildNeuron(const Node &node) {
  NeuronConfig config = neuronConfigOf(node);
  bool plif = config.kind == NeuronKind::PLIF;
  return [config, plif, layer = node.name](const Inputs &in, const RunContext &context) {
    int64_t fired = 0;
    at::Tensor out = spikes(in[0], plif ? in[1] : at::Tensor(), config, fired);
    if (context.firing && !context.keepRunningStatistics)
      context.firing->add(layer, fired, out.numel(),
                          neuronKernelIsa() == KernelIsa::Avx2 ? "neuron (avx2)" : "neuron");
    return out;
  };
}

} // namespace

NeuronConfig neuronConfigOf(const Node &node) {
  if (node.opType == op::kIFNode)
    return parseCommon(node, NeuronKind::IF);
  if (node.opType == op::kLIFNode) {
    NeuronConfig config = parseCommon(node, NeuronKind::LIF);
    config.tau = NodeAttributes(node).getFloatIn(
        attr::kTau, 2.0f, 1.0f, std::numeric_limits<float>::infinity(), /*minOpen=*/true);
    return config;
  }
  if (node.opType == op::kPLIFNode)
    return parseCommon(node, NeuronKind::PLIF);
  throw Error(node.describe() + " is not a neuron");
}

void registerNeuronOps(OpRegistry &registry) {
  registry.add(op::kIFNode, buildNeuron);
  registry.add(op::kLIFNode, buildNeuron);
  registry.add(op::kPLIFNode, buildNeuron);
}

} // namespace snn::runtime
