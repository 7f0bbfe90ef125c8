//===- SurrogateSpikeAutograd.cpp - Heaviside with a surrogate gradient ---===//

#include "snn/Runtime/Autograd/SurrogateSpikeAutograd.h"
#include "snn/Runtime/Kernels/SurrogateKernels.h"

#include <ATen/ops/ge.h>
#include <ATen/ops/mul.h>
#include <torch/csrc/autograd/custom_function.h>

namespace snn::runtime {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct SurrogateSpikeFunction : public torch::autograd::Function<SurrogateSpikeFunction> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &h,
                            const SpikeSurrogate &surrogate) {
    ctx->save_for_backward({h});
    ctx->saved_data["kind"] = int64_t(surrogate.kind);
    ctx->saved_data["alpha"] = double(surrogate.alpha);
    ctx->saved_data["beta"] = double(surrogate.beta);
    return heaviside(h);
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    at::Tensor h = ctx->get_saved_variables()[0];
    at::Tensor slope =
        surrogateGradient(h, Surrogate(ctx->saved_data["kind"].toInt()),
                          ctx->saved_data["alpha"].toDouble(), ctx->saved_data["beta"].toDouble());
    return {at::mul(grads[0], slope), at::Tensor()};
  }
};

} // namespace

at::Tensor heaviside(const at::Tensor &h) {
  // A comparison gives exact 0 and 1: +0, never -0.
  return at::ge(h, 0).to(h.scalar_type()).contiguous();
}

at::Tensor surrogateSpikeWithGrad(const at::Tensor &h, const SpikeSurrogate &surrogate) {
  return SurrogateSpikeFunction::apply(h, surrogate);
}

} // namespace snn::runtime
