//===- BatchNormAutograd.cpp - Training BatchNorm as a Function -----------===//

#include "snn/Runtime/Autograd/BatchNormAutograd.h"
#include "snn/Runtime/Kernels/BatchNormBackwardKernels.h"
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
    // On a channels-last x (a channels-last conv2d's output), the gradient
    // in x's layout, as the backward kernels read it.
    at::Tensor grad = grads[0];
    if (!saved[0].is_contiguous() && saved[0].is_contiguous(at::MemoryFormat::ChannelsLast))
      grad = grad.contiguous(at::MemoryFormat::ChannelsLast);
    // ATen's arithmetic, on NHWC too (its own NHWC kernel sums in another
    // order): the bits a spiking block's backward gives.
    if (batchNormBackwardKernelApplies(saved[0]) && batchNormBackwardKernelAvailable()) {
      BatchNormBackwardResult r =
          batchNormTrainingBackward(grad, saved[0], saved[1], saved[2], saved[3], mask);
      return {r.gradInput,  r.gradWeight,  r.gradBias,  at::Tensor(),
              at::Tensor(), at::Tensor(), at::Tensor()};
    }
    // What PyTorch's NativeBatchNormBackward0 calls (the running statistics
    // are unused in training).
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
