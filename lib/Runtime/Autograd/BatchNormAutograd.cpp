//===- BatchNormAutograd.cpp - Training BatchNorm as a Function -----------===//

#include "snn/Runtime/Autograd/BatchNormAutograd.h"
#include "snn/Runtime/Kernels/BatchNormKernels.h"

#include <ATen/ops/native_batch_norm_backward.h>
#include <torch/csrc/autograd/custom_function.h>

namespace snn::runtime {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct BatchNormFunction : public torch::autograd::Function<BatchNormFunction> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x,
                            const at::Tensor &weight, const at::Tensor &bias,
                            const at::Tensor &runningMean,
                            const at::Tensor &runningVar, double momentum,
                            double eps) {
    BatchNormForwardResult result = batchNormTrainingForward(
        x, weight, bias, runningMean, runningVar, momentum, eps);
    ctx->save_for_backward({x, weight, result.mean, result.invstd});
    ctx->saved_data["eps"] = eps;
    return result.output;
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    variable_list saved = ctx->get_saved_variables();
    std::array<bool, 3> mask{ctx->needs_input_grad(0),
                             ctx->needs_input_grad(1),
                             ctx->needs_input_grad(2)};
    // What PyTorch's NativeBatchNormBackward0 calls (the running statistics
    // are unused in training).
    // On a channels-last x (a channels-last conv2d's output), the gradient
    // in x's layout: ATen's backward takes its NHWC kernel only when both are
    // NHWC, the one the spiking block's backward calls (same bits either way).
    at::Tensor grad = grads[0];
    if (!saved[0].is_contiguous() && saved[0].is_contiguous(at::MemoryFormat::ChannelsLast))
      grad = grad.contiguous(at::MemoryFormat::ChannelsLast);
    auto [gradX, gradWeight, gradBias] = at::native_batch_norm_backward(
        grad, saved[0], saved[1], at::Tensor(), at::Tensor(), saved[2],
        saved[3], /*train=*/true, ctx->saved_data["eps"].toDouble(), mask);
    return {gradX,        gradWeight,   gradBias,    at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

} // namespace

at::Tensor batchNormTrainingWithGrad(const at::Tensor &x,
                                     const at::Tensor &weight,
                                     const at::Tensor &bias,
                                     const at::Tensor &runningMean,
                                     const at::Tensor &runningVar,
                                     double momentum, double eps) {
  return BatchNormFunction::apply(x, weight, bias, runningMean, runningVar,
                                  momentum, eps);
}

} // namespace snn::runtime
