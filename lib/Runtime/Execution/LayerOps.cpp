//===- LayerOps.cpp - Stateless layers on time-major tensors --------------===//
//
// Per-step layers fold [T, N, ...] into [T*N, ...], call the ATen op once and
// unfold, exactly as SpikingJelly's SeqToANNContainer does; the same ATen call
// on the same shape is what makes results match the PyTorch reference.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Autograd/BatchNormAutograd.h"
#include "snn/Runtime/Autograd/ConvAutograd.h"
#include "snn/Runtime/Kernels/BatchNormKernels.h"
#include "snn/Runtime/Kernels/SpikeBits.h"
#include "snn/Runtime/Kernels/SpikeConvKernels.h"
#include "snn/Runtime/Execution/DataParallel.h"
#include "snn/Runtime/Distributed/SyncBatchNorm.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Autograd/LinearAutograd.h"
#include "snn/Runtime/Autograd/SpikeLinearAutograd.h"
#include "snn/Runtime/Autograd/MaxPoolAutograd.h"
#include "snn/Runtime/Execution/LayerAttributes.h"
#include "snn/Runtime/Execution/NodeAttributes.h"
#include "snn/Runtime/Execution/OpRegistry.h"
#include "snn/Runtime/Execution/SpikingBlockFusion.h"
#include "snn/Runtime/Execution/ConvolutionLayout.h"
#include "snn/Runtime/Execution/EventKernelChoice.h"
#include "snn/Runtime/Execution/TimeInvariance.h"
#include "snn/Runtime/Support/TensorIO.h"
#include "snn/Schema/ArtifactOps.h"

#include <ATen/ops/adaptive_avg_pool2d.h>
#include <ATen/ops/add.h>
#include <ATen/ops/avg_pool2d.h>
#include <ATen/ops/batch_norm.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/dropout.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/max_pool2d.h>
#include <ATen/ops/mul.h>
#include <c10/core/GradMode.h>

#include <charconv>
#include <limits>
#include <cstdlib>

namespace snn::runtime {

namespace attr = schema::attr;
namespace op = schema::op;

namespace {

using Inputs = std::vector<at::Tensor>;
using Pair = std::array<int64_t, 2>;

/// Checks the rank of a time-major input; `layout` is the expected form, e.g.
/// "[T, N, C, H, W]".
void requireRank(const at::Tensor &x, int64_t minRank, int64_t maxRank,
                 const char *layout) {
  if (x.dim() < minRank || x.dim() > maxRank)
    throw Error(std::string("expects a ") + layout + " input, got " +
                formatShape(x.sizes()));
}

/// Applies `op` to every time step of x [T, N, ...] at once.
template <typename Op> at::Tensor perStep(const at::Tensor &x, Op &&op) {
  int64_t steps = x.size(0), batch = x.size(1);
  at::Tensor y = op(x.flatten(0, 1));
  std::vector<int64_t> sizes{steps, batch};
  sizes.insert(sizes.end(), y.sizes().begin() + 1, y.sizes().end());
  return y.reshape(sizes);
}



const at::Tensor &optional(const Inputs &inputs, size_t index) {
  static const at::Tensor undefined;
  return index < inputs.size() ? inputs[index] : undefined;
}

/// Split backward (zero-bubble pipelines): the weight's gradient waits in
/// the run's queue for the schedule's W.
bool defersWeightGrad(const RunContext &context, const at::Tensor &weight) {
  return context.weightGrads && c10::GradMode::is_enabled() && weight.requires_grad();
}

Kernel buildLinear(const Node &) {
  return [](const Inputs &in, const RunContext &context) {
    requireRank(in[0], 3, 64, "[T, N, ..., in_features]");
    bool defer = defersWeightGrad(context, in[1]);
    return perStep(in[0], [&](const at::Tensor &x) {
      if (defer)
        return linearDeferringWeightGrad(x, in[1], optional(in, 2), *context.weightGrads);
      double density = context.denseLayers ? 0.0 : spikeLinearMaxDensity();
      if (density == kMeasuredDensity)
        density = linearEventKernelUse(x, in[1], optional(in, 2), context.training) ==
                              EventKernelUse::Event
                      ? 1.0
                      : 0.0;
      if (density > 0)
        if (std::optional<at::Tensor> y = spikeLinear(x, in[1], optional(in, 2), density))
          return *y;
      return threadedLinear(x, in[1], optional(in, 2));
    });
  };
}

/// The event-driven conv2d (SpikeConvKernels.h, ConvAutograd.h's
/// eventConv2dWithGrad in training) whose input is spikes at most
/// --spike-conv-density dense.
std::optional<at::Tensor> spikeConvIfSparse(const at::Tensor &x, const at::Tensor &weight,
                                            const at::Tensor &bias,
                                            const SpikeConvGeometry &geometry,
                                            const RunContext &context) {
  double limit = spikeConvMaxDensity();
  if ((limit <= 0.0 && limit != kMeasuredDensity) || context.denseLayers)
    return std::nullopt;
  bool training = c10::GradMode::is_enabled() &&
                  (x.requires_grad() || weight.requires_grad() ||
                   (bias.defined() && bias.requires_grad()));
  bool sparse = false;
  if (limit == kMeasuredDensity) {
    // The run's mode, not whether autograd records this call: a recomputed
    // segment's forward (no graph) and its replay take the kernel the same
    // call takes without recomputation.
    EventKernelUse use = convEventKernelUse(x, weight, bias, geometry, context.training);
    if (use == EventKernelUse::NotSpikes)
      return std::nullopt;
    sparse = use == EventKernelUse::Event;
  } else {
    std::optional<double> density = spikeDensity(x);
    if (!density)
      return std::nullopt;
    sparse = *density <= limit;
  }
  countSpikeConv(sparse);
  if (!sparse)
    return std::nullopt;
  if (training)
    return eventConv2dWithGrad(x, weight, bias,
                               {geometry.stride, geometry.padding, geometry.dilation, 1});
  return spikeConv2dForward(x, weight, bias, geometry);
}

/// The bits a conv2d keeps of its input (SpikeBits.h) when autograd keeps the
/// input for the weight's gradient and the input is spikes (checked while
/// packing); nullopt otherwise.
std::optional<at::Tensor> spikeBitsToKeep(const at::Tensor &x, const at::Tensor &weight) {
  if (!spikeBitsEnabled() || !c10::GradMode::is_enabled() ||
      !(x.requires_grad() || weight.requires_grad()))
    return std::nullopt;
  std::optional<at::Tensor> bits = packSpikeBitsIfSpikes(x);
  if (bits)
    countPackedSpikes(x.numel());
  return bits;
}

/// A per-step conv2d on an input that is the same at every step
/// (TimeInvariance.h): one step's convolution, repeated over T.
at::Tensor convOfRepeatedInput(const at::Tensor &step, int64_t steps, const at::Tensor &weight,
                               const at::Tensor &bias, const Conv2dShape &shape) {
  countTimeInvariantRun();
  bool wantsGrad = c10::GradMode::is_enabled() &&
                   (step.requires_grad() || weight.requires_grad() ||
                    (bias.defined() && bias.requires_grad()));
  // With NCHW convolutions (PyTorch's arithmetic, --no-channels-last) PyTorch's gradients too.
  if (wantsGrad)
    return conv2dOfRepeatedInput(step, steps, weight, bias, shape,
                                 channelsLastConvolutionEnabled()
                                     ? RepeatedInputBackward::SumOfSteps
                                     : RepeatedInputBackward::Fold);
  return repeatedOverTime(
      at::conv2d(step, weight, bias, shape.stride, shape.padding, shape.dilation, shape.groups),
      steps);
}

Kernel buildConv2d(const Node &node) {
  NodeAttributes attributes(node);
  Pair stride = attributes.getSizePair(attr::kStride, {1, 1}, 1);
  Pair padding = attributes.getSizePair(attr::kPadding, {0, 0}, 0);
  Pair dilation = attributes.getSizePair(attr::kDilation, {1, 1}, 1);
  int64_t groups = attributes.getIntIn(attr::kGroups, 1, 1, NodeAttributes::kMaxSize);
  return [=](const Inputs &in, const RunContext &context) {
    requireRank(in[0], 5, 5, "[T, N, C, H, W]");
    if (in[0].size(2) % groups != 0 || in[1].size(0) % groups != 0)
      throw Error(std::to_string(groups) + " groups do not divide " +
                  std::to_string(in[0].size(2)) + " input and " +
                  std::to_string(in[1].size(0)) + " output channels");
    bool defer = defersWeightGrad(context, in[1]);
    Conv2dShape shape{stride, padding, dilation, groups};
    // --no-fusion also runs this node as PyTorch does, on every step.
    if (!defer && spikingBlocksEnabled())
      if (at::Tensor step = timeInvariantStep(in[0]); step.defined())
        return convOfRepeatedInput(convolutionInput(step), in[0].size(0), in[1],
                                   optional(in, 2), shape);
    return perStep(in[0], [&](const at::Tensor &fold) {
      at::Tensor x = convolutionInput(fold);
      if (defer)
        return conv2dDeferringWeightGrad(x, in[1], optional(in, 2),
                                         {stride, padding, dilation, groups},
                                         *context.weightGrads);
      if (groups == 1)
        if (std::optional<at::Tensor> y = spikeConvIfSparse(x, in[1], optional(in, 2),
                                                            {stride, padding, dilation}, context))
          return *y;
      if (std::optional<at::Tensor> bits = spikeBitsToKeep(x, in[1]))
        return conv2dSavingSpikeBits(x, *bits, in[1], optional(in, 2),
                                     {stride, padding, dilation, groups});
      return at::conv2d(x, in[1], optional(in, 2), stride, padding, dilation,
                        groups);
    });
  };
}

/// The runtime's training forward (BatchNormKernels.h: ATen's values
/// without its serial statistics loops) where it applies.
bool fastBatchNorm(const at::Tensor &x, const Inputs &in) {
  return batchNormKernelApplies(x, in[1], in[2], in[3], in[4]) &&
         batchNormKernelAvailable();
}

at::Tensor batchNormTraining(const at::Tensor &x, const Inputs &in,
                             double momentum, double eps) {
  bool wantsGrad =
      x.requires_grad() || in[1].requires_grad() || in[2].requires_grad();
  if (c10::GradMode::is_enabled() && wantsGrad)
    return batchNormTrainingWithGrad(x, in[1], in[2], in[3], in[4], momentum,
                                     eps);
  return batchNormTrainingForward(x, in[1], in[2], in[3], in[4], momentum, eps)
      .output;
}

Kernel buildBatchNorm(const Node &node) {
  BatchNormAttributes attributes = batchNormAttributesOf(node);
  double eps = attributes.eps, momentum = attributes.momentum;
  // Inference normalises with the running statistics. Training uses the
  // statistics of the [T*N, C, ...] fold (T*N*H*W values per channel, as
  // SpikingJelly's SeqToANNContainer) and ATen updates the running ones in
  // place: they are the ParameterStore's buffers.
  // Data-parallel training synchronises the statistics over the dp group
  // (SyncBatchNorm: the statistics of the global batch), unless turned off.
  return [=](const Inputs &given, const RunContext &context) {
    requireRank(given[0], 3, 5, "[T, N, C, ...]");
    const DataParallelContext *dp = context.dataParallel;
    bool sync = context.training && dp && dp->syncBatchNorm && dp->size() > 1;
    // A recomputation updates copies of the running statistics: the same
    // kernels and values, the buffers updated once per forward.
    Inputs in = given;
    if (context.training && context.keepRunningStatistics)
      for (size_t i : {3, 4})
        if (in[i].defined())
          in[i] = in[i].clone();
    return perStep(in[0], [&](const at::Tensor &x) {
      if (sync)
        return dist::syncBatchNorm(x, in[1], in[2], in[3], in[4], momentum,
                                   eps, dp->group);
      if (context.training && fastBatchNorm(x, in))
        return batchNormTraining(x, in, momentum, eps);
      return at::batch_norm(x, in[1], in[2], in[3], in[4], context.training,
                            momentum, eps, /*cudnn_enabled=*/true);
    });
  };
}

/// PyTorch pools default the stride to the kernel size.
Pair poolStride(const NodeAttributes &attributes, Pair kernel) {
  return attributes.getSizePair(attr::kStride, kernel, 1);
}

/// A max_pool2d node's attributes (PyTorch's defaults when absent).
struct MaxPoolGeometry {
  Pair kernel, stride, padding, dilation;
  bool ceilMode;
};

MaxPoolGeometry maxPoolGeometryOf(const Node &node) {
  NodeAttributes attributes(node);
  Pair kernel = attributes.getSizePair(attr::kKernelSize, 1);
  return {kernel, poolStride(attributes, kernel),
          attributes.getSizePair(attr::kPadding, {0, 0}, 0),
          attributes.getSizePair(attr::kDilation, {1, 1}, 1),
          attributes.getBool(attr::kCeilMode, false)};
}

Kernel buildMaxPool2d(const Node &node) {
  // The runtime's kernel where it applies (MaxPoolKernels.h: same values,
  // several times faster than ATen's); ATen's for padded, dilated or
  // ceil-mode pools.
  if (std::optional<MaxPoolWindow> window = maxPoolKernelWindowOf(node))
    return [window = *window](const Inputs &in, const RunContext &) {
      requireRank(in[0], 5, 5, "[T, N, C, H, W]");
      return perStep(in[0], [&](const at::Tensor &x) {
        if (c10::GradMode::is_enabled() && x.requires_grad())
          return maxPoolWithGrad(x, window);
        return maxPoolForward(x, window, /*saveArgmax=*/false).output;
      });
    };
  MaxPoolGeometry g = maxPoolGeometryOf(node);
  return [=](const Inputs &in, const RunContext &) {
    requireRank(in[0], 5, 5, "[T, N, C, H, W]");
    return perStep(in[0], [&](const at::Tensor &x) {
      return at::max_pool2d(x, g.kernel, g.stride, g.padding, g.dilation, g.ceilMode);
    });
  };
}

Kernel buildAvgPool2d(const Node &node) {
  NodeAttributes attributes(node);
  Pair kernel = attributes.getSizePair(attr::kKernelSize, 1);
  Pair stride = poolStride(attributes, kernel);
  Pair padding = attributes.getSizePair(attr::kPadding, {0, 0}, 0);
  bool ceilMode = attributes.getBool(attr::kCeilMode, false);
  bool countIncludePad = attributes.getBool(attr::kCountIncludePad, true);
  return [=](const Inputs &in, const RunContext &) {
    requireRank(in[0], 5, 5, "[T, N, C, H, W]");
    return perStep(in[0], [&](const at::Tensor &x) {
      return at::avg_pool2d(x, kernel, stride, padding, ceilMode,
                            countIncludePad);
    });
  };
}

Kernel buildAdaptiveAvgPool2d(const Node &node) {
  Pair outputSize = NodeAttributes(node).getSizePair(attr::kOutputSize, 1);
  return [=](const Inputs &in, const RunContext &) {
    requireRank(in[0], 5, 5, "[T, N, C, H, W]");
    return perStep(in[0], [&](const at::Tensor &x) {
      return at::adaptive_avg_pool2d(x, outputSize);
    });
  };
}

Kernel buildFlatten(const Node &) {
  return [](const Inputs &in, const RunContext &) {
    requireRank(in[0], 3, 64, "[T, N, ...]");
    return in[0].flatten(2);
  };
}

/// Data parallelism: rank r of W holds columns [r*N, (r+1)*N) of the global
/// batch [T, W*N, ...]. Every rank draws the mask of the global batch from
/// the same generator state, exactly as at::dropout draws it for the folded
/// [T*W*N, ...] tensor in one process (empty_like + bernoulli_(1 - p), then
/// divided by 1 - p), and multiplies by its own slice. So the masks, and the
/// generator's state afterwards, equal one process's on the global batch.
at::Tensor shardOfGlobalDropout(const at::Tensor &x, double p, int rank,
                                int ranks) {
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  int64_t local = shape[1];
  shape[1] = local * ranks;
  at::Tensor noise = at::empty(shape, x.options().requires_grad(false));
  noise.bernoulli_(1.0 - p);
  noise.div_(1.0 - p);
  return at::mul(x, noise.narrow(1, int64_t(rank) * local, local));
}

Kernel buildDropout(const Node &node) {
  double p = dropoutProbability(node);
  // Identity in inference. Training draws the mask exactly as PyTorch's
  // F.dropout does (at::dropout on the [T*N, ...] fold, default generator),
  // so a run seeded like the reference trainer gets the same masks.
  return [p](const Inputs &in, const RunContext &context) {
    if (!context.training)
      return in[0];
    requireRank(in[0], 2, 64, "[T, N, ...]");
    const DataParallelContext *dp = context.dataParallel;
    if (dp && dp->size() > 1 && p > 0.0 && p < 1.0)
      return shardOfGlobalDropout(in[0], p, dp->rank(), dp->size());
    return perStep(in[0], [&](const at::Tensor &x) {
      return at::dropout(x, p, /*train=*/true);
    });
  };
}

void requireSameShape(const at::Tensor &a, const at::Tensor &b) {
  if (a.sizes() != b.sizes())
    throw Error("operands have different shapes " + formatShape(a.sizes()) +
                " and " + formatShape(b.sizes()));
}

Kernel buildAdd(const Node &) {
  return [](const Inputs &in, const RunContext &) {
    requireSameShape(in[0], in[1]);
    return at::add(in[0], in[1]);
  };
}

Kernel buildMul(const Node &) {
  return [](const Inputs &in, const RunContext &) {
    requireSameShape(in[0], in[1]);
    return at::mul(in[0], in[1]);
  };
}

Kernel buildMeanTime(const Node &) {
  return [](const Inputs &in, const RunContext &) {
    requireRank(in[0], 2, 64, "[T, N, ...]");
    return in[0].mean(at::IntArrayRef{0});
  };
}

} // namespace

BatchNormAttributes batchNormAttributesOf(const Node &node) {
  NodeAttributes attributes(node);
  BatchNormAttributes result;
  result.eps = decimalValue(attributes.getFloatIn(
      attr::kEps, 1e-5f, 0.0f, std::numeric_limits<float>::infinity(), /*minOpen=*/true));
  result.momentum = decimalValue(attributes.getFloatIn(attr::kMomentum, 0.1f, 0.0f, 1.0f));
  return result;
}

std::optional<MaxPoolWindow> maxPoolKernelWindowOf(const Node &node) {
  MaxPoolGeometry g = maxPoolGeometryOf(node);
  if (!maxPoolKernelApplies(g.kernel, g.stride, g.padding, g.dilation, g.ceilMode))
    return std::nullopt;
  return MaxPoolWindow{g.kernel[0], g.kernel[1], g.stride[0], g.stride[1]};
}


void registerLayerOps(OpRegistry &registry) {
  registry.add(op::kLinear, buildLinear);
  registry.add(op::kConv2d, buildConv2d);
  registry.add(op::kBatchNorm, buildBatchNorm);
  registry.add(op::kMaxPool2d, buildMaxPool2d);
  registry.add(op::kAvgPool2d, buildAvgPool2d);
  registry.add(op::kAdaptiveAvgPool2d, buildAdaptiveAvgPool2d);
  registry.add(op::kFlatten, buildFlatten, 1, OutputStorage::MayViewInput);
  registry.add(op::kDropout, buildDropout, 1, OutputStorage::MayViewInput);
  registry.add(op::kAdd, buildAdd);
  registry.add(op::kMul, buildMul);
  registry.add(op::kMeanTime, buildMeanTime);
}

} // namespace snn::runtime
