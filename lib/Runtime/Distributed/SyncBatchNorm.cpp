//===- SyncBatchNorm.cpp - BatchNorm with statistics over a group ---------===//
//
// The torch::autograd::Function of SyncBatchNorm.h (custom_function.h is
// heavy: this is its only user besides AutogradCollectives.cpp).
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Distributed/SyncBatchNorm.h"
#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Distributed/Error.h"
#include "snn/Schema/TrainingCommunication.h"

#include <ATen/Dispatch.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/batch_norm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/ones_like.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cmath>

namespace snn::dist {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct GroupHolder : torch::CustomClassHolder {
  explicit GroupHolder(Group group) : group(std::move(group)) {}
  Group group;
};

/// x [M, C, ...] as M x C x S contiguous blocks: the loops below read each
/// element once, in memory order.
struct ChannelBlocks {
  int64_t outer, channels, inner;
  explicit ChannelBlocks(const at::Tensor &x)
      : outer(x.size(0)), channels(x.size(1)),
        inner(x.numel() / std::max<int64_t>(1, x.size(0) * x.size(1))) {}
};

/// Sums of a row in kLanes independent double chains (so the loop
/// vectorises; the order differs from a serial sum by rounding only).
constexpr int kLanes = 8;

/// sum x and sum x^2 of one row.
template <typename T>
void rowMoments(const T *row, int64_t n, double &sum, double &squares) {
  double s[kLanes] = {}, q[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      double v = double(row[i + l]);
      s[l] += v;
      q[l] += v * v;
    }
  for (; i < n; ++i) {
    double v = double(row[i]);
    s[0] += v;
    q[0] += v * v;
  }
  for (int l = 0; l < kLanes; ++l) {
    sum += s[l];
    squares += q[l];
  }
}

/// sum dy and sum dy * (x - mean) of one row.
template <typename T>
void rowGradientSums(const T *g, const T *x, int64_t n, double mean,
                     double &sumDy, double &sumDyXmu) {
  double s[kLanes] = {}, p[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      double d = double(g[i + l]);
      s[l] += d;
      p[l] += d * (double(x[i + l]) - mean);
    }
  for (; i < n; ++i) {
    double d = double(g[i]);
    s[0] += d;
    p[0] += d * (double(x[i]) - mean);
  }
  for (int l = 0; l < kLanes; ++l) {
    sumDy += s[l];
    sumDyXmu += p[l];
  }
}

/// Per channel: sum x and sum x^2, in double, in one pass.
template <typename T>
void channelMoments(const at::Tensor &x, double *sum, double *squares) {
  ChannelBlocks b(x);
  const T *data = x.data_ptr<T>();
  std::fill(sum, sum + b.channels, 0.0);
  std::fill(squares, squares + b.channels, 0.0);
  for (int64_t m = 0; m < b.outer; ++m)
    for (int64_t c = 0; c < b.channels; ++c)
      rowMoments(data + (m * b.channels + c) * b.inner, b.inner, sum[c],
                 squares[c]);
}

/// Per channel: sum dy and sum dy * (x - mean), in double, in one pass.
template <typename T>
void gradientSums(const at::Tensor &dy, const at::Tensor &x,
                  const double *mean, double *sumDy, double *sumDyXmu) {
  ChannelBlocks b(x);
  const T *g = dy.data_ptr<T>();
  const T *data = x.data_ptr<T>();
  std::fill(sumDy, sumDy + b.channels, 0.0);
  std::fill(sumDyXmu, sumDyXmu + b.channels, 0.0);
  for (int64_t m = 0; m < b.outer; ++m)
    for (int64_t c = 0; c < b.channels; ++c) {
      int64_t at = (m * b.channels + c) * b.inner;
      rowGradientSums(g + at, data + at, b.inner, mean[c], sumDy[c],
                      sumDyXmu[c]);
    }
}

/// dx = dy * a[c] + x * b[c] + k[c], one pass.
template <typename T>
void inputGradient(const at::Tensor &dy, const at::Tensor &x, const T *a,
                   const T *b, const T *k, at::Tensor &dx) {
  ChannelBlocks blocks(x);
  const T *g = dy.data_ptr<T>();
  const T *data = x.data_ptr<T>();
  T *out = dx.data_ptr<T>();
  for (int64_t m = 0; m < blocks.outer; ++m)
    for (int64_t c = 0; c < blocks.channels; ++c) {
      int64_t at = (m * blocks.channels + c) * blocks.inner;
      const T ac = a[c], bc = b[c], kc = k[c];
      for (int64_t i = 0; i < blocks.inner; ++i)
        out[at + i] = g[at + i] * ac + data[at + i] * bc + kc;
    }
}

void checkFloating(const at::Tensor &x) {
  if (x.scalar_type() != at::kFloat && x.scalar_type() != at::kDouble)
    throw DistributedError("SyncBatchNorm: expects float32 or float64 input, got " +
                           std::string(c10::toString(x.scalar_type())));
}

struct SyncBatchNormFunction
    : torch::autograd::Function<SyncBatchNormFunction> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &input,
                            const at::Tensor &weight, const at::Tensor &bias,
                            const at::Tensor &runningMean,
                            const at::Tensor &runningVar, double momentum,
                            double eps, const Group &group) {
    at::Tensor x = input.contiguous();
    checkFloating(x);
    const int64_t channels = x.size(1);
    // [sum x (C), sum x^2 (C), count] of this member, summed over the
    // group: every member gets the same bits from the all_reduce.
    at::Tensor stats = at::empty({schema::syncBatchNormForwardElements(channels)},
                                 x.options().dtype(at::kDouble));
    double *s = stats.data_ptr<double>();
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "sync_batch_norm_moments", [&] {
      channelMoments<scalar_t>(x, s, s + channels);
    });
    s[2 * channels] = double(x.numel() / std::max<int64_t>(channels, 1));
    allReduce(group, stats, ReduceOp::Sum);
    const double count = s[2 * channels];
    if (count <= 1)
      throw DistributedError(
          "SyncBatchNorm: expected more than 1 value per channel in training "
          "over group " + group.name() + ", got " + std::to_string(int64_t(count)));
    at::Tensor mean = stats.narrow(0, 0, channels).div(count);
    // Biased variance; m2 = count * var feeds the unbiased running one.
    at::Tensor m2 = stats.narrow(0, channels, channels) - mean.square().mul_(count);
    m2.clamp_min_(0.0);
    at::Tensor var = m2 / count;
    if (runningMean.defined()) {
      at::NoGradGuard noGrad;
      runningMean.copy_(runningMean.to(at::kDouble).mul_(1.0 - momentum).add_(mean * momentum));
    }
    if (runningVar.defined()) {
      at::NoGradGuard noGrad;
      runningVar.copy_(runningVar.to(at::kDouble)
                           .mul_(1.0 - momentum)
                           .add_(m2 * (momentum / (count - 1.0))));
    }
    at::Tensor meanF = mean.to(x.scalar_type());
    at::Tensor varF = var.to(x.scalar_type());
    ctx->save_for_backward({x, weight});
    ctx->saved_data["invstd"] = var.add(eps).rsqrt_(); // double [C]
    ctx->saved_data["mean"] = mean;                     // double [C]
    ctx->saved_data["count"] = count;
    ctx->saved_data["has_bias"] = bias.defined();
    ctx->saved_data["group"] =
        c10::IValue::make_capsule(c10::make_intrusive<GroupHolder>(group));
    // Normalising with given statistics is inference-mode batch_norm's kernel.
    return at::batch_norm(x, weight, bias, meanF, varF, /*training=*/false,
                          0.0, eps, /*cudnn_enabled=*/true);
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    variable_list saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &weight = saved[1];
    at::Tensor dy = grads[0].contiguous();
    at::Tensor invstd = ctx->saved_data["invstd"].toTensor();
    at::Tensor mean = ctx->saved_data["mean"].toTensor();
    double count = ctx->saved_data["count"].toDouble();
    Group group = static_cast<GroupHolder *>(
                      ctx->saved_data["group"].toCapsule().get())
                      ->group;
    const int64_t channels = x.size(1);
    at::ScalarType type = x.scalar_type();
    // This member's sum(dy) and sum(dy * (x - mean)), then the group's.
    at::Tensor local = at::empty({schema::syncBatchNormBackwardElements(channels)},
                                 x.options().dtype(at::kDouble));
    double *l = local.data_ptr<double>();
    AT_DISPATCH_FLOATING_TYPES(type, "sync_batch_norm_grad_sums", [&] {
      gradientSums<scalar_t>(dy, x, mean.data_ptr<double>(), l, l + channels);
    });
    at::Tensor global = local.clone();
    allReduce(group, global, ReduceOp::Sum);
    at::Tensor gSumDy = global.narrow(0, 0, channels);
    at::Tensor gSumDyXmu = global.narrow(0, channels, channels);
    // dx = (dy - sum_dy / n - xhat * sum_dy_xhat / n) * invstd * w
    //    = dy * a + x * b + k, per channel.
    at::Tensor w = weight.defined() ? weight.to(at::kDouble)
                                    : at::ones_like(invstd);
    at::Tensor a = invstd * w;
    at::Tensor b = -a * invstd.square() * gSumDyXmu / count;
    at::Tensor k = -a * gSumDy / count - b * mean;
    at::Tensor dx = at::empty_like(x);
    AT_DISPATCH_FLOATING_TYPES(type, "sync_batch_norm_input_grad", [&] {
      at::Tensor ac = a.to(type), bc = b.to(type), kc = k.to(type);
      inputGradient<scalar_t>(dy, x, ac.data_ptr<scalar_t>(),
                              bc.data_ptr<scalar_t>(), kc.data_ptr<scalar_t>(), dx);
    });
    // The weight and bias gradients are this member's own.
    at::Tensor gradWeight = (local.narrow(0, channels, channels) * invstd).to(type);
    at::Tensor gradBias = local.narrow(0, 0, channels).to(type);
    return {dx,
            weight.defined() ? gradWeight : at::Tensor(),
            ctx->saved_data["has_bias"].toBool() ? gradBias : at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor()};
  }
};

} // namespace

at::Tensor syncBatchNorm(const at::Tensor &x, const at::Tensor &weight,
                         const at::Tensor &bias, const at::Tensor &runningMean,
                         const at::Tensor &runningVar, double momentum,
                         double eps, const Group &group) {
  if (!group.valid() || group.size() == 1)
    return at::batch_norm(x, weight, bias, runningMean, runningVar,
                          /*training=*/true, momentum, eps,
                          /*cudnn_enabled=*/true);
  if (x.dim() < 2)
    throw DistributedError("SyncBatchNorm: expects [N, C, ...], got " +
                           c10::str(x.sizes()));
  return SyncBatchNormFunction::apply(x, weight, bias, runningMean, runningVar,
                                      momentum, eps, group);
}

} // namespace snn::dist
