//===- SpikingBlockFusion.cpp - Runs of nodes run as one block ------------===//

#include "snn/Runtime/Execution/SpikingBlockFusion.h"
#include "snn/Runtime/Execution/FiringCounts.h"
#include "snn/Runtime/Autograd/SpikingBlockAutograd.h"
#include "snn/Runtime/Execution/ConvolutionLayout.h"
#include "snn/Runtime/Execution/DataParallel.h"
#include "snn/Runtime/Execution/LayerAttributes.h"
#include "snn/Runtime/Execution/TimeInvariance.h"
#include "snn/Schema/ArtifactOps.h"

#include <c10/core/GradMode.h>

#include <atomic>
#include <map>

namespace snn::runtime {

namespace op = schema::op;

namespace {

std::atomic<bool> &enabledFlag() {
  static std::atomic<bool> enabled{true};
  return enabled;
}

std::atomic<int64_t> fusedRuns{0}, unfusedRuns{0};

bool isNeuron(const Node &node) { return schema::isNeuronOp(node.opType); }

bool requiresGrad(const at::Tensor &t) { return t.defined() && t.requires_grad(); }

/// What one block computes, fixed when the program is built.
struct BlockSpec {
  std::optional<BatchNormAttributes> norm;
  NeuronConfig neuron;
  std::optional<MaxPoolWindow> pool;
};

/// The operands of one run from the kernel's inputs.
BlockOperands operandsOf(const BlockSpec &spec, const std::vector<at::Tensor> &in) {
  BlockOperands operands{std::nullopt, spec.neuron, at::Tensor(), spec.pool};
  size_t next = 1;
  if (spec.norm) {
    operands.norm =
        BlockNorm{in[1], in[2], in[3], in[4], spec.norm->momentum, spec.norm->eps};
    next = 5;
  }
  if (spec.neuron.kind == NeuronKind::PLIF)
    operands.plifWeight = in[next];
  return operands;
}

/// Whether the block's BatchNorm can run inside it in this run: the
/// runtime's BatchNorm kernel applies, and training statistics are this
/// rank's own (no SyncBatchNorm).
bool normApplies(const BlockOperands &operands, const at::Tensor &x, const RunContext &context) {
  const BlockNorm &norm = *operands.norm;
  if (context.training) {
    const DataParallelContext *dp = context.dataParallel;
    if (dp && dp->syncBatchNorm && dp->size() > 1)
      return false;
    if (!batchNormKernelAvailable())
      return false;
  }
  // One step stands for a time-invariant input (flattening it would copy).
  at::Tensor layout = x.stride(0) == 0 ? x.select(0, 0) : x.flatten(0, 1);
  return batchNormKernelApplies(layout, norm.weight, norm.bias, norm.runningMean,
                                norm.runningVar);
}

/// The forward without autograd: training statistics or running ones.
at::Tensor forwardOnly(const at::Tensor &x, const BlockOperands &operands, bool training) {
  SpikingBlockForwardResult result;
  SpikingBlock block{std::nullopt, operands.neuron, 0.0, operands.pool};
  if (operands.norm) {
    const BlockNorm &norm = *operands.norm;
    if (training) {
      BatchNormForwardResult stats = blockStatistics(x, norm);
      block.affine = batchNormTrainingAffine(stats.mean, stats.invstd, norm.weight, norm.bias);
    } else {
      block.affine = batchNormInferenceAffine(norm.weight, norm.bias, norm.runningMean,
                                              norm.runningVar, norm.eps);
      if (!block.affine)
        return at::Tensor();
    }
  }
  if (operands.neuron.kind == NeuronKind::PLIF)
    block.k = plifDecay(operands.plifWeight);
  result = spikingBlockForward(x, block, /*save=*/false);
  if (operands.fired)
    *operands.fired = result.fired;
  return result.output;
}

/// Runs the block, or returns an undefined tensor where it does not apply
/// (the nodes then run one by one). `fired` receives the spikes fired.
at::Tensor runBlock(const BlockSpec &spec, const std::vector<at::Tensor> &in,
                    const RunContext &context, int64_t *fired) {
  const at::Tensor &x = in[0];
  BlockOperands operands = operandsOf(spec, in);
  operands.fired = fired;
  // A recomputation updates copies of the running statistics: the buffers
  // change once per forward, as without one.
  if (operands.norm && context.training && context.keepRunningStatistics) {
    for (at::Tensor *buffer : {&operands.norm->runningMean, &operands.norm->runningVar})
      if (buffer->defined())
        *buffer = buffer->clone();
  }
  SpikingBlock shape{std::nullopt, spec.neuron, 0.0, spec.pool};
  if (!spikingBlocksEnabled() || !spikingBlockApplies(x, shape) ||
      (operands.norm && !normApplies(operands, x, context)))
    return at::Tensor();
  bool wantsGrad = c10::GradMode::is_enabled() &&
                   (requiresGrad(x) || requiresGrad(operands.plifWeight) ||
                    (operands.norm && (requiresGrad(operands.norm->weight) ||
                                       requiresGrad(operands.norm->bias))));
  if (!wantsGrad)
    return forwardOnly(x, operands, context.training);
  // The Function computes batch statistics; an eval-mode BatchNorm with
  // gradients runs node by node.
  if (operands.norm && !context.training)
    return at::Tensor();
  // After a layer of one repeated step (TimeInvariance.h) the block takes that
  // step and gives it the steps' summed gradient: no [T, ...] gradient is held.
  // PyTorch's arithmetic (--no-channels-last) sums the steps' gradients as
  // autograd's expand does.
  if (channelsLastConvolutionEnabled())
    if (at::Tensor step = repeatedStepWithHistory(x); step.defined())
      return spikingBlockWithGrad(step, operands, x.size(0));
  return spikingBlockWithGrad(x, operands);
}

/// How many nodes read each value (the graph output counts as a reader).
std::map<std::string, int> readers(const Graph &graph, const std::string &outputName) {
  std::map<std::string, int> count;
  for (const Node &node : graph.nodes)
    for (const std::string &input : node.inputs)
      ++count[input];
  ++count[outputName];
  return count;
}

/// Whether node `next` reads the output of `node` and nothing else does.
bool feedsOnly(const Node &node, const Node &next, std::map<std::string, int> &uses) {
  return node.outputs.size() == 1 && !next.inputs.empty() &&
         next.inputs[0] == node.outputs[0] && uses[node.outputs[0]] == 1;
}

} // namespace

std::vector<SpikingBlockPlan> planSpikingBlocks(const Graph &graph,
                                                const std::string &outputName) {
  std::map<std::string, int> uses = readers(graph, outputName);
  const std::vector<Node> &nodes = graph.nodes;
  std::vector<SpikingBlockPlan> plans;
  for (size_t i = 0; i < nodes.size(); ++i) {
    size_t first = i, neuron = i;
    bool norm = nodes[i].opType == op::kBatchNorm && nodes[i].inputs.size() == 5;
    if (norm) {
      if (i + 1 >= nodes.size() || !isNeuron(nodes[i + 1]) ||
          !feedsOnly(nodes[i], nodes[i + 1], uses))
        continue;
      neuron = i + 1;
    } else if (!isNeuron(nodes[i])) {
      continue;
    }
    BlockSpec spec;
    if (norm)
      spec.norm = batchNormAttributesOf(nodes[first]);
    spec.neuron = neuronConfigOf(nodes[neuron]);
    size_t last = neuron;
    if (neuron + 1 < nodes.size() && nodes[neuron + 1].opType == op::kMaxPool2d &&
        feedsOnly(nodes[neuron], nodes[neuron + 1], uses))
      if ((spec.pool = maxPoolKernelWindowOf(nodes[neuron + 1])))
        last = neuron + 1;
    if (last == first)
      continue; // a lone neuron: its own kernel is the block
    SpikingBlockPlan plan;
    plan.first = first;
    plan.count = last - first + 1;
    plan.inputs = nodes[first].inputs;
    if (spec.neuron.kind == NeuronKind::PLIF)
      plan.inputs.push_back(nodes[neuron].inputs.at(1));
    plan.output = nodes[last].outputs.at(0);
    plan.kernel = [spec, layer = nodes[neuron].name](const std::vector<at::Tensor> &in,
                                                      const RunContext &context) {
      int64_t fired = 0;
      at::Tensor out = runBlock(spec, in, context, &fired);
      if (!context.keepRunningStatistics) // a recomputation ran it already
        ++(out.defined() ? fusedRuns : unfusedRuns);
      if (out.defined() && context.firing && !context.keepRunningStatistics)
        context.firing->add(layer, fired, in[0].numel(),
                            neuronKernelIsa() == KernelIsa::Avx2 ? "fused block (avx2)"
                                                                 : "fused block");
      return out;
    };
    plans.push_back(std::move(plan));
    i = last;
  }
  return plans;
}

void setSpikingBlocksEnabled(bool enabled) { enabledFlag().store(enabled); }
bool spikingBlocksEnabled() { return enabledFlag().load(); }

SpikingBlockCounts spikingBlockCounts() {
  return {fusedRuns.load(), unfusedRuns.load(), timeInvariantRuns(), fusedNormBackwards()};
}

} // namespace snn::runtime
