//===- LinearAutograd.cpp - Large Linear layers split over threads --------===//

#include "snn/Runtime/Autograd/LinearAutograd.h"
#include "snn/Runtime/Autograd/WeightGradQueue.h"

#include <ATen/Parallel.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/sum.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>

namespace snn::runtime {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// Multiply-adds per thread below which a split is not worth the calls.
constexpr double kMinWorkPerThread = 4e6;

/// out = a @ b (+ bias), computed in row blocks of `out` in parallel: each
/// block is one single-threaded BLAS call (nested ATen parallelism runs
/// inline), so every element sums over the full reduction dimension.
at::Tensor rowBlocks(const at::Tensor &a, const at::Tensor &b,
                     const at::Tensor &bias) {
  at::Tensor out = at::empty({a.size(0), b.size(1)}, a.options());
  int64_t threads = at::get_num_threads();
  int64_t grain = (a.size(0) + threads - 1) / threads;
  at::parallel_for(0, a.size(0), grain, [&](int64_t begin, int64_t end) {
    // OpenMP workers do not inherit the caller's autograd or inference
    // mode; these are plain kernel calls on tensors autograd never sees.
    at::AutoDispatchBelowADInplaceOrView belowAutograd;
    at::Tensor rows = out.narrow(0, begin, end - begin);
    if (bias.defined())
      at::addmm_out(rows, bias, a.narrow(0, begin, end - begin), b);
    else
      at::mm_out(rows, a.narrow(0, begin, end - begin), b);
  });
  return out;
}

struct LinearFunction : public torch::autograd::Function<LinearFunction> {
  /// The bias is an optional: autograd cannot take an undefined tensor as
  /// an input.
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x,
                            const at::Tensor &weight,
                            const c10::optional<at::Tensor> &bias) {
    ctx->save_for_backward({x, weight});
    ctx->saved_data["has_bias"] = bias.has_value();
    return rowBlocks(x, weight.t(), bias.value_or(at::Tensor()));
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    variable_list saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &weight = saved[1];
    at::Tensor grad = grads[0].contiguous();
    at::Tensor gradX, gradWeight, gradBias;
    if (ctx->needs_input_grad(0))
      gradX = rowBlocks(grad, weight, at::Tensor());
    if (ctx->needs_input_grad(1))
      gradWeight = rowBlocks(grad.t(), x, at::Tensor());
    if (ctx->saved_data["has_bias"].toBool() && ctx->needs_input_grad(2))
      gradBias = at::sum(grad, {0});
    return {gradX, gradWeight, gradBias};
  }
};

/// The weight gradient of `x` [M, in] for `grad` [M, out]: rowBlocks when
/// the forward split (LinearFunction's backward), else autograd's formula
/// for at::linear (mm_mat2_backward on weight.t(): grad^T x).
at::Tensor weightGradOf(const at::Tensor &grad, const at::Tensor &x, bool split) {
  return split ? rowBlocks(grad.t(), x, at::Tensor()) : grad.t().mm(x);
}

/// The parameters of a deferred linear, for the queued task, which adds
/// their gradients to these very tensors. The weight is also an input of the
/// autograd function, so that its output requires grad even when x does not
/// (a stage's first layer); backward gives it no gradient.
struct LinearParameters {
  at::Tensor weight, bias;
  WeightGradQueue *queue = nullptr;
};

struct DeferredLinearFunction
    : public torch::autograd::Function<DeferredLinearFunction> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x,
                            const at::Tensor & /*weight, tracked*/, const LinearParameters &p) {
    bool split = linearIsSplit(x, p.weight);
    ctx->save_for_backward({x});
    ctx->saved_data["weight"] = p.weight;
    ctx->saved_data["bias"] = p.bias;
    ctx->saved_data["split"] = split;
    ctx->saved_data["queue"] = int64_t(reinterpret_cast<intptr_t>(p.queue));
    return split ? rowBlocks(x, p.weight.t(), p.bias) : at::linear(x, p.weight, p.bias);
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    at::Tensor x = ctx->get_saved_variables()[0];
    at::Tensor weight = ctx->saved_data["weight"].toTensor();
    at::Tensor bias = ctx->saved_data["bias"].toTensor();
    bool split = ctx->saved_data["split"].toBool();
    auto *queue = reinterpret_cast<WeightGradQueue *>(
        intptr_t(ctx->saved_data["queue"].toInt()));
    at::Tensor grad = split ? grads[0].contiguous() : grads[0];
    queue->push([x, grad, weight, bias, split] {
      accumulateGrad(weight, weightGradOf(grad, x, split));
      if (bias.defined())
        accumulateGrad(bias, at::sum(grad, {0}));
    });
    at::Tensor gradX;
    if (ctx->needs_input_grad(0))
      gradX = split ? rowBlocks(grad, weight, at::Tensor()) : grad.mm(weight);
    return {gradX, at::Tensor(), at::Tensor()};
  }
};

} // namespace

at::Tensor linearDeferringWeightGrad(const at::Tensor &x, const at::Tensor &weight,
                                     const at::Tensor &bias, WeightGradQueue &queue) {
  // [..., in] as the 2-D GEMM at::linear runs for it.
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = weight.size(0);
  at::Tensor y = DeferredLinearFunction::apply(x.reshape({-1, x.size(-1)}), weight,
                                               LinearParameters{weight, bias, &queue});
  return y.view(shape);
}

bool linearIsSplit(const at::Tensor &x, const at::Tensor &weight) {
  int64_t threads = at::get_num_threads();
  if (threads < 2 || x.dim() != 2 || x.scalar_type() != at::kFloat ||
      !x.device().is_cpu() || weight.scalar_type() != at::kFloat)
    return false;
  // The smallest of the three GEMMs per thread.
  double work = double(x.size(0)) * double(x.size(1)) * double(weight.size(0));
  int64_t rows = std::min({x.size(0), weight.size(0), x.size(1)});
  return rows >= 2 * threads && work / double(threads) >= kMinWorkPerThread;
}

at::Tensor threadedLinear(const at::Tensor &x, const at::Tensor &weight,
                          const at::Tensor &bias) {
  if (!linearIsSplit(x, weight))
    return at::linear(x, weight, bias);
  bool wantsGrad = x.requires_grad() || weight.requires_grad() ||
                   (bias.defined() && bias.requires_grad());
  if (!c10::GradMode::is_enabled() || !wantsGrad)
    return rowBlocks(x, weight.t(), bias);
  c10::optional<at::Tensor> optionalBias;
  if (bias.defined())
    optionalBias = bias;
  return LinearFunction::apply(x, weight, optionalBias);
}

} // namespace snn::runtime
