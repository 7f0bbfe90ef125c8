//===- AttentionOps.cpp - spiking_attention ------------------------------===//
//
// The attention product of a spiking self-attention block (SpikingJelly's
// SpikingSelfAttention): the fused qkv spikes [T, N, 3*C, L], channels laid
// out as (3, heads, D), give per step and head out = ((v k^T) q) * scale over
// [D, L] matrices. The kernel makes the same ATen calls on the same views as
// the PyTorch module (matmul of the heads' slices, then the scalar product),
// so values and autograd's backward match it. With 0/1 spikes every product
// is a count below 2^24, exact in float32 whatever order a GEMM sums in.
//
//===----------------------------------------------------------------------===//
#include "snn/Runtime/Execution/NodeAttributes.h"
#include "snn/Runtime/Execution/OpRegistry.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/TensorIO.h"
#include "snn/Schema/ArtifactOps.h"

#include <ATen/ops/matmul.h>

#include <limits>

namespace snn::runtime {

namespace attr = schema::attr;
namespace op = schema::op;

namespace {

using Inputs = std::vector<at::Tensor>;

Kernel buildSpikingAttention(const Node &node) {
  NodeAttributes attributes(node);
  int64_t heads = attributes.getIntIn(attr::kNumHeads, 0, 1, NodeAttributes::kMaxSize);
  constexpr float kMax = std::numeric_limits<float>::max();
  // PyTorch multiplies by the Python float; the exporter wrote it as a float32.
  double scale = attributes.getFloatIn(attr::kScale, 0.125f, -kMax, kMax);
  int64_t groups = attributes.getIntIn(attr::kHeadGroups, 1, 1, heads);
  if (heads % groups != 0)
    attributes.fail("attribute 'head_groups' " + std::to_string(groups) +
                    " must divide num_heads " + std::to_string(heads));
  return [heads, groups, scale](const Inputs &in, const RunContext &) {
    const at::Tensor &x = in[0];
    if (x.dim() != 4 || x.size(2) % (3 * heads) != 0)
      throw Error("expects a [T, N, 3*C, L] input whose 3*C is a multiple of 3 * " +
                  std::to_string(heads) + " heads, got " + formatShape(x.sizes()));
    int64_t channels = x.size(2) / 3, headDim = channels / heads;
    // Channels as (groups, 3, heads per group, D); one group is SpikingJelly's (3, H, D).
    at::Tensor qkv = x.reshape(
        {x.size(0), x.size(1), groups, 3, heads / groups, headDim, x.size(3)});
    at::Tensor q = qkv.select(3, 0), k = qkv.select(3, 1), v = qkv.select(3, 2);
    at::Tensor out = at::matmul(at::matmul(v, k.transpose(-2, -1)), q).mul(scale);
    return out.reshape({x.size(0), x.size(1), channels, x.size(3)});
  };
}

} // namespace

void registerAttentionOps(OpRegistry &registry) {
  registry.add(op::kSpikingAttention, buildSpikingAttention);
}

} // namespace snn::runtime
