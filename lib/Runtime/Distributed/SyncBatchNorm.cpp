//===- SyncBatchNorm.cpp - BatchNorm with statistics over a group ---------===//
//
// The torch::autograd::Function of SyncBatchNorm.h (custom_function.h is
// heavy: this is its only user besides AutogradCollectives.cpp).
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Distributed/SyncBatchNorm.h"
#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Distributed/Error.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/batch_norm.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/native_batch_norm_backward.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/var_mean.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>

namespace snn::dist {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct GroupHolder : torch::CustomClassHolder {
  explicit GroupHolder(Group group) : group(std::move(group)) {}
  Group group;
};

/// Every dim but the channels'.
std::vector<int64_t> reductionDims(const at::Tensor &x) {
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < x.dim(); ++d)
    dims.push_back(d);
  return dims;
}

/// [C] -> [1, C, 1, ...] to broadcast against x.
at::Tensor channelView(const at::Tensor &v, const at::Tensor &x) {
  std::vector<int64_t> shape(size_t(x.dim()), 1);
  shape[1] = v.size(0);
  return v.view(shape);
}

struct SyncBatchNormFunction
    : torch::autograd::Function<SyncBatchNormFunction> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x,
                            const at::Tensor &weight, const at::Tensor &bias,
                            const at::Tensor &runningMean,
                            const at::Tensor &runningVar, double momentum,
                            double eps, const Group &group) {
    const int64_t channels = x.size(1);
    std::vector<int64_t> dims = reductionDims(x);
    // This member's statistics (Welford in ATen), then Chan's parallel
    // combination over the members in rank order, in double: every member
    // computes the same numbers from the same gathered values.
    auto [localVar, localMean] =
        at::var_mean(x, dims, /*correction=*/0, /*keepdim=*/false);
    const double localCount = double(x.numel() / std::max<int64_t>(channels, 1));
    at::Tensor stats = at::empty({1, 2 * channels + 1}, x.options().dtype(at::kDouble));
    stats.select(1, 0).fill_(localCount);
    stats.narrow(1, 1, channels).copy_(localMean.view({1, channels}));
    stats.narrow(1, 1 + channels, channels)
        .copy_(localVar.view({1, channels}).to(at::kDouble).mul_(localCount));
    at::Tensor all = allGather(group, stats); // [members, 2C + 1]
    double count = all[0][0].item<double>();
    at::Tensor mean = all[0].narrow(0, 1, channels).clone();
    at::Tensor m2 = all[0].narrow(0, 1 + channels, channels).clone();
    for (int64_t member = 1; member < all.size(0); ++member) {
      double n = all[member][0].item<double>();
      if (n <= 0)
        continue;
      at::Tensor delta = all[member].narrow(0, 1, channels) - mean;
      double total = count + n;
      mean.add_(delta * (n / total));
      m2.add_(all[member].narrow(0, 1 + channels, channels))
          .add_(delta.square() * (count * n / total));
      count = total;
    }
    if (count <= 1)
      throw DistributedError(
          "SyncBatchNorm: expected more than 1 value per channel in training "
          "over group " + group.name() + ", got " + std::to_string(int64_t(count)));
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
    at::Tensor invstd = var.add(eps).rsqrt_();
    ctx->save_for_backward({x, weight, meanF, varF});
    ctx->saved_data["invstd"] = invstd; // double [C]
    ctx->saved_data["mean"] = mean;     // double [C]
    ctx->saved_data["count"] = count;
    ctx->saved_data["eps"] = eps;
    ctx->saved_data["has_bias"] = bias.defined();
    ctx->saved_data["group"] =
        c10::IValue::make_capsule(c10::make_intrusive<GroupHolder>(group));
    // Normalising with given statistics is inference-mode batch_norm's kernel.
    return at::batch_norm(x, weight, bias, meanF, varF, /*training=*/false,
                          0.0, eps, /*cudnn_enabled=*/true);
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    variable_list saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &weight = saved[1], &meanF = saved[2],
                     &varF = saved[3];
    at::Tensor dy = grads[0].contiguous();
    at::Tensor invstd = ctx->saved_data["invstd"].toTensor();
    at::Tensor mean = ctx->saved_data["mean"].toTensor();
    double count = ctx->saved_data["count"].toDouble();
    double eps = ctx->saved_data["eps"].toDouble();
    Group group = static_cast<GroupHolder *>(
                      ctx->saved_data["group"].toCapsule().get())
                      ->group;
    const int64_t channels = x.size(1);
    // This member's sum(dy * xhat) and sum(dy): inference-mode batch_norm's
    // backward computes exactly these as its weight and bias gradients.
    auto [unused, sumDyXhat, sumDy] = at::native_batch_norm_backward(
        dy, x, weight, meanF, varF, at::Tensor(), at::Tensor(),
        /*train=*/false, eps, {false, true, true});
    (void)unused;
    at::Tensor global = at::cat({sumDy, sumDyXhat}).to(at::kDouble);
    allReduce(group, global, ReduceOp::Sum);
    at::Tensor gSumDy = global.narrow(0, 0, channels);
    at::Tensor gSumDyXhat = global.narrow(0, channels, channels);
    // dx = (dy - sum_dy / n - xhat * sum_dy_xhat / n) * invstd * w
    //    = dy * a + x * b + c, per channel.
    at::Tensor w = weight.defined() ? weight.to(at::kDouble)
                                    : at::ones_like(invstd);
    at::Tensor a = invstd * w;
    at::Tensor b = -a * invstd * gSumDyXhat / count;
    at::Tensor c = -a * gSumDy / count - b * mean;
    at::ScalarType type = x.scalar_type();
    at::Tensor dx = dy * channelView(a.to(type), x);
    dx.addcmul_(x, channelView(b.to(type), x)).add_(channelView(c.to(type), x));
    return {dx,
            weight.defined() ? sumDyXhat : at::Tensor(),
            ctx->saved_data["has_bias"].toBool() ? sumDy : at::Tensor(),
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
