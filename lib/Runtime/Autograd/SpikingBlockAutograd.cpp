//===- SpikingBlockAutograd.cpp - A spiking block as a Function -----------===//

#include "snn/Runtime/Autograd/SpikingBlockAutograd.h"
#include "SavedNeuronConfig.h"
#include "snn/Runtime/Kernels/BatchNormBackwardKernels.h"

#include <ATen/ops/full_like.h>
#include <ATen/ops/native_batch_norm_backward.h>
#include <torch/csrc/autograd/custom_function.h>

#include <atomic>

namespace snn::runtime {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

std::atomic<int64_t> fusedNormRuns{0};

/// Whether the block's BatchNorm backward runs fused with its BPTT: ATen's
/// rounding reproduced on this machine, planes of 16 elements or more.
bool fusedNormBackward(const at::Tensor &x) {
  return batchNormBackwardKernelApplies(x) && batchNormBackwardKernelAvailable();
}


} // namespace

BatchNormForwardResult blockStatistics(const at::Tensor &x, const BlockNorm &norm) {
  // A time-invariant input: the statistics of its one step, T times over.
  if (x.stride(0) == 0)
    return batchNormTrainingStatistics(x.select(0, 0), norm.runningMean, norm.runningVar,
                                       norm.momentum, norm.eps, x.size(0));
  return batchNormTrainingStatistics(x.flatten(0, 1), norm.runningMean, norm.runningVar,
                                     norm.momentum, norm.eps);
}

namespace {

/// The block's input [T, N, C, H, W] from what its Function received: the
/// input itself, or the step it repeats over `repeatSteps` (stride 0).
at::Tensor blockInput(const at::Tensor &input, int64_t repeatSteps) {
  if (repeatSteps == 0)
    return input;
  std::vector<int64_t> sizes{repeatSteps};
  sizes.insert(sizes.end(), input.sizes().begin(), input.sizes().end());
  return input.unsqueeze(0).expand(sizes);
}

/// The block's backward with its BatchNorm's plane sums taken in the BPTT
/// pass; the BatchNorm backward (ATen's arithmetic, BatchNormBackwardKernels.h)
/// overwrites the BPTT's gradient. `input`: what the Function received (x,
/// or the step x repeats: then the BPTT sums its gradient over the steps and
/// BatchNorm's backward is the step's, whose statistics are the fold's).
SpikingBlockBackwardResult backwardWithFusedNorm(const at::Tensor &gradOutput,
                                                 const variable_list &saved, const at::Tensor &x,
                                                 const SpikingBlock &block,
                                                 std::array<bool, 3> mask, at::Tensor &gradX,
                                                 at::Tensor &gradWeight, at::Tensor &gradBias) {
  const at::Tensor &input = saved[0], &mean = saved[2], &invstd = saved[3], &weight = saved[4];
  bool summed = input.dim() != x.dim();
  std::vector<float> sums(size_t((summed ? 1 : x.size(0)) * x.size(1) * x.size(2)));
  std::vector<float> dots(sums.size());
  BlockNormSums norm{mean.data_ptr<float>(), sums.data(), dots.data()};
  SpikingBlockBackwardResult r =
      spikingBlockBackward(gradOutput, saved[1], x, block, &norm, summed);
  BatchNormPlaneTotals totals{sums.data(), dots.data()};
  BatchNormBackwardResult b = batchNormTrainingBackward(
      r.gradInput, summed ? input : x, weight, mean, invstd, mask, &totals, /*inPlace=*/true);
  gradX = b.gradInput;
  gradWeight = b.gradWeight;
  gradBias = b.gradBias;
  ++fusedNormRuns;
  return r;
}

struct SpikingBlockFunction : public torch::autograd::Function<SpikingBlockFunction> {
  /// The BatchNorm's weight and bias and PLIF's w are optionals so that
  /// autograd sees them as inputs only when the block has them.
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &input,
                            const c10::optional<at::Tensor> &normWeight,
                            const c10::optional<at::Tensor> &normBias,
                            const c10::optional<at::Tensor> &plifWeight,
                            const BlockOperands &operands, int64_t repeatSteps) {
    at::Tensor repeated = blockInput(input, repeatSteps);
    SpikingBlock block{std::nullopt, operands.neuron, 0.0, operands.pool};
    at::Tensor mean, invstd;
    if (operands.norm) {
      const BlockNorm &norm = *operands.norm;
      BatchNormForwardResult stats = blockStatistics(repeated, norm);
      mean = stats.mean;
      invstd = stats.invstd;
      block.affine = batchNormTrainingAffine(mean, invstd, *normWeight, *normBias);
    }
    if (operands.neuron.kind == NeuronKind::PLIF)
      block.k = plifDecay(*plifWeight);
    SpikingBlockForwardResult result = spikingBlockForward(repeated, block, /*save=*/true);
    if (operands.fired)
      *operands.fired = result.fired;
    at::Tensor scale = block.affine ? block.affine->scale : at::Tensor();
    at::Tensor shift = block.affine ? block.affine->shift : at::Tensor();
    ctx->save_for_backward({input, result.argmax, mean, invstd,
                            normWeight ? *normWeight : at::Tensor(), scale, shift,
                            plifWeight ? *plifWeight : at::Tensor()});
    saveConfig(ctx, operands.neuron, block.k);
    ctx->saved_data["eps"] = operands.norm ? operands.norm->eps : 0.0;
    ctx->saved_data["repeat"] = repeatSteps;
    ctx->saved_data["fma"] = block.affine && block.affine->fma;
    ctx->saved_data["pooled"] = operands.pool.has_value();
    if (operands.pool) {
      const MaxPoolWindow &w = *operands.pool;
      ctx->saved_data["pool"] = std::vector<int64_t>{w.kernelH, w.kernelW, w.strideH, w.strideW};
    }
    return result.output;
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    variable_list saved = ctx->get_saved_variables();
    const at::Tensor &input = saved[0], &mean = saved[2], &invstd = saved[3],
                     &weight = saved[4];
    int64_t repeatSteps = ctx->saved_data["repeat"].toInt();
    at::Tensor x = blockInput(input, repeatSteps);
    SpikingBlock block{std::nullopt, loadConfig(ctx), ctx->saved_data["k"].toDouble(),
                       std::nullopt};
    if (saved[5].defined())
      block.affine = ChannelAffine{saved[5], saved[6], ctx->saved_data["fma"].toBool()};
    if (ctx->saved_data["pooled"].toBool()) {
      std::vector<int64_t> w = ctx->saved_data["pool"].toIntVector();
      block.pool = MaxPoolWindow{w[0], w[1], w[2], w[3]};
    }
    // needs_input_grad(1, 2): the BatchNorm's weight and bias, inputs only with a BatchNorm.
    std::array<bool, 3> mask{ctx->needs_input_grad(0), mean.defined() && ctx->needs_input_grad(1),
                             mean.defined() && ctx->needs_input_grad(2)};
    at::Tensor gradX, gradWeight, gradBias, gradPlif;
    SpikingBlockBackwardResult r;
    if (mean.defined() && fusedNormBackward(repeatSteps > 0 ? input : x)) {
      r = backwardWithFusedNorm(grads[0], saved, x, block, mask, gradX, gradWeight, gradBias);
    } else {
      r = spikingBlockBackward(grads[0], saved[1], x, block, nullptr, repeatSteps > 0);
      if (mean.defined()) {
        // ATen's own BatchNorm backward on the [T*N, C, H, W] fold, as the
        // layers one at a time call it: the gradients are PyTorch's bit for bit
        // (of a repeated step: the step's, on the BPTT's sum over the steps).
        at::Tensor fold = repeatSteps > 0 ? input
                          : (x.stride(0) == 0 ? x.contiguous() : x).flatten(0, 1);
        std::tie(gradX, gradWeight, gradBias) = at::native_batch_norm_backward(
            repeatSteps > 0 ? r.gradInput : r.gradInput.flatten(0, 1), fold, weight,
            at::Tensor(), at::Tensor(), mean, invstd,
            /*train=*/true, ctx->saved_data["eps"].toDouble(), mask);
        if (gradX.defined())
          gradX = gradX.view(input.sizes());
      } else if (ctx->needs_input_grad(0)) {
        gradX = r.gradInput;
      }
    }
    // needs_input_grad counts the arguments that are tensors: x, the
    // BatchNorm's two if present, then w.
    size_t plifInput = mean.defined() ? 3 : 1;
    if (block.neuron.kind == NeuronKind::PLIF && ctx->needs_input_grad(plifInput))
      gradPlif = at::full_like(saved[7], r.gradK);
    return {gradX, gradWeight, gradBias, gradPlif, at::Tensor(), at::Tensor()};
  }
};

} // namespace

int64_t fusedNormBackwards() { return fusedNormRuns.load(); }

at::Tensor spikingBlockWithGrad(const at::Tensor &x, const BlockOperands &operands,
                                int64_t repeatSteps) {
  c10::optional<at::Tensor> normWeight, normBias, plif;
  if (operands.norm) {
    normWeight = operands.norm->weight;
    normBias = operands.norm->bias;
  }
  if (operands.neuron.kind == NeuronKind::PLIF)
    plif = operands.plifWeight;
  return SpikingBlockFunction::apply(x, normWeight, normBias, plif, operands, repeatSteps);
}

} // namespace snn::runtime
