//===- MaxPoolAutograd.cpp - Max pooling as an autograd Function ----------===//

#include "snn/Runtime/Autograd/MaxPoolAutograd.h"

#include <torch/csrc/autograd/custom_function.h>

namespace snn::runtime {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct MaxPoolFunction : public torch::autograd::Function<MaxPoolFunction> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x,
                            const MaxPoolWindow &window) {
    MaxPoolForwardResult result = maxPoolForward(x, window, /*saveArgmax=*/true);
    // The argmax is not differentiable and not an output: save it as data.
    ctx->saved_data["argmax"] = result.argmax;
    ctx->saved_data["sizes"] = x.sizes().vec();
    ctx->saved_data["window"] = std::vector<int64_t>{
        window.kernelH, window.kernelW, window.strideH, window.strideW};
    return result.output;
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto &data = ctx->saved_data;
    std::vector<int64_t> w = data["window"].toIntVector();
    MaxPoolWindow window{w[0], w[1], w[2], w[3]};
    at::Tensor gradIn =
        maxPoolBackward(grads[0], data["argmax"].toTensor(),
                        data["sizes"].toIntVector(), window);
    return {gradIn, at::Tensor()};
  }
};

} // namespace

at::Tensor maxPoolWithGrad(const at::Tensor &x, const MaxPoolWindow &window) {
  return MaxPoolFunction::apply(x, window);
}

} // namespace snn::runtime
