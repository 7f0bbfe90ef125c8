//===- PerStepShapeOps.cpp - group_norm, reshape, concat on time-major ---===//
//
// The per-step ops SpikingJelly ports need beyond the classic CNN set:
// group_norm (layer.GroupNorm), reshape (a per-step view, e.g. the [1, 1, F]
// plane a VotingLayer average-pools), concat (torch.cat on channels) and the
// sum_time readout (x.sum(0)) and reduce_mean (a mean over per-step dims, e.g.
// a Spikformer's tokens). Each
// calls the ATen op PyTorch's module or function calls, on the same shapes, so
// values (and ATen's autograd) match the reference.
//
//===----------------------------------------------------------------------===//
#include "snn/Runtime/Execution/NodeAttributes.h"
#include "snn/Runtime/Execution/OpRegistry.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/TensorIO.h"
#include "snn/Schema/ArtifactOps.h"

#include <ATen/ops/cat.h>
#include <ATen/ops/group_norm.h>

#include <limits>

namespace snn::runtime {

namespace attr = schema::attr;
namespace op = schema::op;

namespace {

using Inputs = std::vector<at::Tensor>;

Kernel buildGroupNorm(const Node &node) {
  NodeAttributes attributes(node);
  int64_t groups =
      attributes.getIntIn(attr::kNumGroups, 1, 1, NodeAttributes::kMaxSize);
  // PyTorch passes eps to ATen as a double: the decimal the float came from.
  double eps = decimalValue(attributes.getFloatIn(
      attr::kEps, 1e-5f, 0.0f, std::numeric_limits<float>::infinity(), /*minOpen=*/true));
  return [=](const Inputs &in, const RunContext &) {
    const at::Tensor &x = in[0];
    if (x.dim() < 3 || x.size(2) % groups != 0)
      throw Error("expects a [T, N, C, ...] input whose C is divisible by " +
                  std::to_string(groups) + " groups, got " + formatShape(x.sizes()));
    at::Tensor y = at::group_norm(x.flatten(0, 1), groups, in[1], in[2], eps,
                                  /*cudnn_enabled=*/true);
    return y.view(x.sizes());
  };
}

Kernel buildReshape(const Node &node) {
  std::vector<int64_t> shape = NodeAttributes(node).getPositiveInts(attr::kShape);
  return [shape](const Inputs &in, const RunContext &) {
    const at::Tensor &x = in[0];
    if (x.dim() < 2)
      throw Error("expects a [T, N, ...] input, got " + formatShape(x.sizes()));
    std::vector<int64_t> sizes{x.size(0), x.size(1)};
    sizes.insert(sizes.end(), shape.begin(), shape.end());
    int64_t want = 1, have = x.numel() / std::max<int64_t>(x.size(0) * x.size(1), 1);
    for (int64_t dim : shape)
      want *= dim;
    if (x.size(0) * x.size(1) > 0 && want != have)
      throw Error("cannot reshape " + formatShape(x.sizes()) + " to per-step dims " +
                  formatShape(shape));
    return x.reshape(sizes);
  };
}

Kernel buildConcat(const Node &node) {
  int64_t axis = NodeAttributes(node).getIntIn(attr::kAxis, -1, 2, 64);
  return [axis](const Inputs &in, const RunContext &) {
    for (const at::Tensor &x : in)
      if (x.dim() <= axis || x.dim() != in[0].dim())
        throw Error("operands must be [T, N, ...] tensors of one rank above axis " +
                    std::to_string(axis) + ", got " + formatShape(x.sizes()));
    return at::cat(in, axis);
  };
}

/// x.mean(axes, keepdim) over per-step dims: the ATen call PyTorch makes.
Kernel buildReduceMean(const Node &node) {
  NodeAttributes attributes(node);
  std::vector<int64_t> axes = attributes.getPositiveInts(attr::kAxes);
  bool keepdim = attributes.getBool(attr::kKeepdims, false);
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] < 2 || (i > 0 && axes[i] <= axes[i - 1]))
      attributes.fail("attribute 'axes' must be ascending per-step dims (each >= 2), got " +
                      formatShape(axes));
  return [axes, keepdim](const Inputs &in, const RunContext &) {
    if (in[0].dim() <= axes.back())
      throw Error("expects a [T, N, ...] input of rank above " + std::to_string(axes.back()) +
                  ", got " + formatShape(in[0].sizes()));
    return in[0].mean(axes, keepdim);
  };
}

/// The readout x.sum(0): ATen's sum over T, as PyTorch computes it.
Kernel buildSumTime(const Node &) {
  return [](const Inputs &in, const RunContext &) {
    if (in[0].dim() < 2)
      throw Error("expects a [T, N, ...] input, got " + formatShape(in[0].sizes()));
    return in[0].sum(at::IntArrayRef{0});
  };
}

} // namespace

void registerPerStepShapeOps(OpRegistry &registry) {
  registry.add(op::kGroupNorm, buildGroupNorm);
  registry.add(op::kReshape, buildReshape, 1, OutputStorage::MayViewInput);
  registry.add(op::kConcat, buildConcat);
  registry.add(op::kSumTime, buildSumTime);
  registry.add(op::kReduceMean, buildReduceMean);
}

} // namespace snn::runtime
