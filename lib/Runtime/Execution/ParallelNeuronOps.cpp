//===- ParallelNeuronOps.cpp - parallel_neuron: PSN, MaskedPSN, SlidingPSN -===//
//
// SpikingJelly's parallel spiking neurons with the ATen ops its PyTorch code
// runs, in its float32 order: the [T, T] matrix W (PSN's weight, MaskedPSN's
// masked_weight(), SlidingPSN's gen_gemm_weight()), H = addmm(bias, W, X
// viewed [T, N * ...]) and S = Heaviside(H) with the surrogate's gradient.
// Autograd through these ops gives the input's, weight's and bias's gradients.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Autograd/SurrogateSpikeAutograd.h"
#include "snn/Runtime/Execution/FiringCounts.h"
#include "snn/Runtime/Execution/NodeAttributes.h"
#include "snn/Runtime/Execution/OpRegistry.h"
#include "snn/Runtime/Execution/SurrogateAttributes.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/TensorIO.h"
#include "snn/Schema/ArtifactOps.h"

#include <ATen/ops/add.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/count_nonzero.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/rsub.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/tril.h>
#include <ATen/ops/triu.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>

namespace snn::runtime {

namespace attr = schema::attr;
namespace variant = schema::profile::parallel_variant;

namespace {

enum class Variant { PSN, Masked, Sliding };

struct ParallelNeuron {
  Variant variant = Variant::PSN;
  int64_t k = 0;       // masked and sliding
  float lambda = 0.0f; // masked
  SpikeSurrogate surrogate;
};

ParallelNeuron parseNode(const Node &node) {
  NodeAttributes attributes(node);
  ParallelNeuron neuron;
  std::string name = attributes.getString(attr::kVariant, "");
  if (name == variant::kPSN)
    neuron.variant = Variant::PSN;
  else if (name == variant::kMasked)
    neuron.variant = Variant::Masked;
  else if (name == variant::kSliding)
    neuron.variant = Variant::Sliding;
  else
    attributes.fail("variant '" + name + "' is not psn, masked or sliding");
  if (neuron.variant != Variant::PSN)
    neuron.k = attributes.getIntIn(attr::kK, 0, 1, NodeAttributes::kMaxSize);
  if (neuron.variant == Variant::Masked) {
    neuron.lambda = attributes.getFloat(attr::kLambda);
    if (!std::isfinite(neuron.lambda))
      attributes.fail("lambda must be finite");
  }
  neuron.surrogate = readSurrogate(attributes, "atan");
  return neuron;
}

/// MaskedPSN's masked_weight(): mask0 is 1 where 0 <= i - j < k (tril(ones) *
/// triu(ones, -(k - 1))); below lambda 1 it is mixed with the all-ones mask1
/// by lambda, a float32 tensor as SpikingJelly's buffer is.
at::Tensor maskedWeight(const at::Tensor &weight, int64_t k, float lambda) {
  at::Tensor mask1 = at::ones(weight.sizes(), weight.options().requires_grad(false));
  at::Tensor mask0 = at::mul(at::tril(mask1), at::triu(mask1, -(k - 1)));
  if (lambda >= 1.0f)
    return at::mul(weight, mask0);
  at::Tensor lambdaTensor = at::scalar_tensor(lambda, mask1.options());
  // (lambda * mask0 + (1.0 - lambda) * mask1) * weight, as Python evaluates it.
  at::Tensor mix =
      at::add(at::mul(lambdaTensor, mask0), at::mul(at::rsub(lambdaTensor, 1.0), mask1));
  return at::mul(mix, weight);
}

/// SlidingPSN's gen_gemm_weight(T): row i holds the last min(i + 1, k) of the k
/// weights, ending at column i; copied slice by slice as SpikingJelly does, so
/// autograd sums the weights' gradients alike.
at::Tensor slidingWeight(const at::Tensor &weight, int64_t steps) {
  int64_t k = weight.size(0);
  at::Tensor matrix = at::zeros({steps, steps}, weight.options().requires_grad(false));
  for (int64_t i = 0; i < steps; ++i) {
    int64_t end = i + 1, start = std::max<int64_t>(0, i + 1 - k);
    int64_t length = std::min(end - start, k);
    matrix.select(0, i).slice(0, start, end).copy_(weight.slice(0, k - length, k));
  }
  return matrix;
}

/// The operands' shapes against the input's T: SpikingJelly's [T, T] and [T, 1],
/// or SlidingPSN's [k] and scalar.
void checkShapes(const ParallelNeuron &neuron, const std::vector<at::Tensor> &in) {
  if (in[0].dim() < 2)
    throw Error("expects a [T, N, ...] input, got " + formatShape(in[0].sizes()));
  int64_t steps = in[0].size(0);
  bool sliding = neuron.variant == Variant::Sliding;
  std::vector<int64_t> weight =
      sliding ? std::vector<int64_t>{neuron.k} : std::vector<int64_t>{steps, steps};
  std::vector<int64_t> bias = sliding ? std::vector<int64_t>{} : std::vector<int64_t>{steps, 1};
  if (in[1].sizes() != at::IntArrayRef(weight) || in[2].sizes() != at::IntArrayRef(bias))
    throw Error("weight " + formatShape(in[1].sizes()) + " and bias " + formatShape(in[2].sizes()) +
                " do not fit an input of " + std::to_string(steps) + " steps (expected " +
                formatShape(weight) + " and " + formatShape(bias) + ")");
  if (sliding && neuron.k > steps)
    throw Error("k = " + std::to_string(neuron.k) + " exceeds the input's " +
                std::to_string(steps) + " steps");
}

/// H = addmm(bias, W, X viewed [T, N * ...]), [T, N * ...].
at::Tensor preFire(const ParallelNeuron &neuron, const std::vector<at::Tensor> &in) {
  const at::Tensor &x = in[0], &weight = in[1], &bias = in[2];
  int64_t steps = x.size(0);
  at::Tensor matrix = neuron.variant == Variant::Masked
                          ? maskedWeight(weight, neuron.k, neuron.lambda)
                      : neuron.variant == Variant::Sliding ? slidingWeight(weight, steps)
                                                           : weight;
  // A time-invariant input may arrive expanded over T (stride 0): GEMM reads it dense.
  return at::addmm(bias, matrix, x.contiguous().view({steps, -1}));
}

Kernel buildParallelNeuron(const Node &node) {
  ParallelNeuron neuron = parseNode(node);
  return [neuron, layer = node.name](const std::vector<at::Tensor> &in, const RunContext &context) {
    checkShapes(neuron, in);
    at::Tensor h = preFire(neuron, in);
    bool record = c10::GradMode::is_enabled() && h.requires_grad();
    // Contiguous exact 0s and 1s: what the layers after it recognise as spikes.
    at::Tensor spikes =
        (record ? surrogateSpikeWithGrad(h, neuron.surrogate) : heaviside(h)).view(in[0].sizes());
    if (context.firing && !context.keepRunningStatistics)
      context.firing->add(layer, at::count_nonzero(spikes).item<int64_t>(), spikes.numel(),
                          "parallel neuron");
    return spikes;
  };
}

} // namespace

void registerParallelNeuronOps(OpRegistry &registry) {
  registry.add(schema::op::kParallelNeuron, buildParallelNeuron);
}

} // namespace snn::runtime
