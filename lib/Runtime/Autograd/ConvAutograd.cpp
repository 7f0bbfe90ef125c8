//===- ConvAutograd.cpp - conv2d with its weight gradient deferred --------===//

#include "snn/Runtime/Autograd/ConvAutograd.h"
#include "snn/Runtime/Autograd/WeightGradQueue.h"

#include "snn/Runtime/Kernels/SpikeBits.h"
#include "snn/Runtime/Kernels/SpikeConvKernels.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/ops/conv2d.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/convolution_backward.h>
#include <ATen/ops/sum.h>
#include <torch/csrc/autograd/custom_function.h>

namespace snn::runtime {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// A Function's conv geometry, kept in its saved data.
void saveShape(AutogradContext *ctx, const Conv2dShape &s) {
  ctx->saved_data["geometry"] = std::vector<int64_t>{
      s.stride[0], s.stride[1], s.padding[0], s.padding[1], s.dilation[0], s.dilation[1],
      s.groups};
}

Conv2dShape loadShape(AutogradContext *ctx) {
  std::vector<int64_t> g = ctx->saved_data["geometry"].toIntVector();
  return {{g[0], g[1]}, {g[2], g[3]}, {g[4], g[5]}, g[6]};
}

/// `step` [N, ...] as the view [steps, N, ...] repeated over the time steps.
at::Tensor repeatedOverSteps(const at::Tensor &step, int64_t steps) {
  std::vector<int64_t> sizes{steps};
  sizes.insert(sizes.end(), step.sizes().begin(), step.sizes().end());
  return step.unsqueeze(0).expand(sizes);
}

/// The parameters and geometry, for the queued task that adds the
/// parameters' gradients. The weight is also a (tracked) input, so that the
/// output requires grad when x does not; backward gives it no gradient.
struct ConvParameters {
  at::Tensor weight, bias;
  Conv2dShape shape;
  WeightGradQueue *queue = nullptr;
};

/// at::convolution_backward as ConvolutionBackward0 calls it for conv2d,
/// computing the outputs `mask` selects (input, weight, bias).
std::tuple<at::Tensor, at::Tensor, at::Tensor>
convBackward(const at::Tensor &grad, const at::Tensor &x, const ConvParameters &p,
             std::array<bool, 3> mask) {
  c10::optional<at::IntArrayRef> biasSizes;
  if (p.bias.defined())
    biasSizes = p.bias.sizes();
  const Conv2dShape &s = p.shape;
  return at::convolution_backward(grad, x, p.weight, biasSizes, s.stride, s.padding,
                                  s.dilation, /*transposed=*/false, {0, 0}, s.groups,
                                  mask);
}

struct DeferredConvFunction : public torch::autograd::Function<DeferredConvFunction> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x,
                            const at::Tensor & /*weight, tracked*/, const ConvParameters &p) {
    ctx->save_for_backward({x});
    ctx->saved_data["weight"] = p.weight;
    ctx->saved_data["bias"] = p.bias;
    saveShape(ctx, p.shape);
    ctx->saved_data["queue"] = int64_t(reinterpret_cast<intptr_t>(p.queue));
    const Conv2dShape &s = p.shape;
    return at::conv2d(x, p.weight, p.bias, s.stride, s.padding, s.dilation, s.groups);
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    ConvParameters p;
    p.weight = ctx->saved_data["weight"].toTensor();
    p.bias = ctx->saved_data["bias"].toTensor();
    p.shape = loadShape(ctx);
    auto *queue = reinterpret_cast<WeightGradQueue *>(
        intptr_t(ctx->saved_data["queue"].toInt()));
    at::Tensor x = ctx->get_saved_variables()[0];
    at::Tensor grad = grads[0];
    queue->push([grad, x, p] {
      auto [unused, gradWeight, gradBias] =
          convBackward(grad, x, p, {false, true, p.bias.defined()});
      accumulateGrad(p.weight, gradWeight);
      if (p.bias.defined())
        accumulateGrad(p.bias, gradBias);
    });
    at::Tensor gradX;
    if (ctx->needs_input_grad(0))
      gradX = std::get<0>(convBackward(grad, x, p, {true, false, false}));
    return {gradX, at::Tensor(), at::Tensor()};
  }
};

/// conv2d whose input, spikes, is kept as bits until the backward.
struct SpikeBitsConvFunction : public torch::autograd::Function<SpikeBitsConvFunction> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x, const at::Tensor &weight,
                            const c10::optional<at::Tensor> &bias, const at::Tensor &bits,
                            const Conv2dShape &shape) {
    at::Tensor b = bias ? *bias : at::Tensor();
    ctx->save_for_backward({bits, weight});
    ctx->saved_data["sizes"] = x.sizes().vec();
    ctx->saved_data["channels_last"] = !x.is_contiguous();
    ctx->saved_data["bias"] = b.defined();
    saveShape(ctx, shape);
    return at::conv2d(x, weight, b, shape.stride, shape.padding, shape.dilation, shape.groups);
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    variable_list saved = ctx->get_saved_variables();
    ConvParameters p;
    p.weight = saved[1];
    bool hasBias = ctx->saved_data["bias"].toBool();
    p.shape = loadShape(ctx);
    at::Tensor x = unpackSpikeBits(saved[0], ctx->saved_data["sizes"].toIntVector(),
                                   ctx->saved_data["channels_last"].toBool()
                                       ? at::MemoryFormat::ChannelsLast
                                       : at::MemoryFormat::Contiguous);
    // convolution_backward reads only the bias's size: a stand-in of it.
    if (hasBias)
      p.bias = at::empty({p.weight.size(0)}, p.weight.options());
    std::array<bool, 3> mask{ctx->needs_input_grad(0), ctx->needs_input_grad(1),
                             hasBias && ctx->needs_input_grad(2)};
    auto [gradX, gradWeight, gradBias] = convBackward(grads[0], x, p, mask);
    return {gradX, gradWeight, gradBias, at::Tensor(), at::Tensor()};
  }
};

/// conv2d of an input that is the same at every step, with PyTorch's
/// gradients bit for bit (RepeatedInputBackward::Fold): the forward convolves
/// one step; the backward convolves the [T*N] fold as PyTorch's node does
/// (the weight's gradient is a sum over T*N samples whose order the fold fixes).
struct RepeatedInputFoldConvFunction
    : public torch::autograd::Function<RepeatedInputFoldConvFunction> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &step, const at::Tensor &weight,
                            const c10::optional<at::Tensor> &bias, int64_t steps,
                            const Conv2dShape &shape) {
    at::Tensor b = bias ? *bias : at::Tensor();
    ctx->save_for_backward({step, weight});
    ctx->saved_data["steps"] = steps;
    ctx->saved_data["bias"] = b.defined();
    saveShape(ctx, shape);
    return repeatedOverSteps(
        at::conv2d(step, weight, b, shape.stride, shape.padding, shape.dilation, shape.groups),
        steps);
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    variable_list saved = ctx->get_saved_variables();
    const at::Tensor &step = saved[0];
    int64_t steps = ctx->saved_data["steps"].toInt();
    ConvParameters p;
    p.weight = saved[1];
    bool hasBias = ctx->saved_data["bias"].toBool();
    p.shape = loadShape(ctx);
    if (hasBias)
      p.bias = at::empty({p.weight.size(0)}, p.weight.options());
    std::array<bool, 3> mask{ctx->needs_input_grad(0), ctx->needs_input_grad(1),
                             hasBias && ctx->needs_input_grad(2)};
    at::Tensor repeated = repeatedOverSteps(step, steps);
    at::Tensor fold = repeated.contiguous().flatten(0, 1);
    auto [gradX, gradWeight, gradBias] =
        convBackward(grads[0].contiguous().flatten(0, 1), fold, p, mask);
    if (gradX.defined()) // the step stands for all T: their gradients add up
      gradX = gradX.view(repeated.sizes()).sum(0);
    return {gradX, gradWeight, gradBias, at::Tensor(), at::Tensor()};
  }
};

/// conv2d of spikes on the event-driven kernels (SpikeConvKernels.h): the
/// forward sums the active inputs' weight taps; the backward computes x's
/// gradient densely (it does not depend on x: the stand-in x is never read)
/// and the weight's from the spikes kept as NHWC bits.
struct EventConvFunction : public torch::autograd::Function<EventConvFunction> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x, const at::Tensor &weight,
                            const c10::optional<at::Tensor> &bias, const at::Tensor &bits,
                            const Conv2dShape &shape) {
    ctx->save_for_backward({bits, weight});
    ctx->saved_data["sizes"] = x.sizes().vec();
    ctx->saved_data["bias"] = bias.has_value();
    saveShape(ctx, shape);
    return spikeConv2dForward(x, weight, bias ? *bias : at::Tensor(),
                              {shape.stride, shape.padding, shape.dilation});
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    variable_list saved = ctx->get_saved_variables();
    ConvParameters p;
    p.weight = saved[1];
    p.shape = loadShape(ctx);
    std::vector<int64_t> sizes = ctx->saved_data["sizes"].toIntVector();
    at::Tensor gradX, gradWeight, gradBias;
    if (ctx->needs_input_grad(0)) {
      at::Tensor standIn = at::empty(sizes, grads[0].options());
      gradX = std::get<0>(convBackward(grads[0], standIn, p, {true, false, false}));
    }
    if (ctx->needs_input_grad(1))
      gradWeight = spikeConv2dWeightGrad(saved[0], sizes, grads[0], p.weight.sizes(),
                                         {p.shape.stride, p.shape.padding, p.shape.dilation});
    if (ctx->saved_data["bias"].toBool() && ctx->needs_input_grad(2))
      gradBias = grads[0].sum({0, 2, 3});
    return {gradX, gradWeight, gradBias, at::Tensor(), at::Tensor()};
  }
};

} // namespace

at::Tensor eventConv2dWithGrad(const at::Tensor &x, const at::Tensor &weight,
                               const at::Tensor &bias, const Conv2dShape &shape) {
  if (shape.groups != 1)
    throw Error("event-driven conv2d: groups must be 1, got " + std::to_string(shape.groups));
  at::Tensor bits = packSpikeBits(x.detach().contiguous(at::MemoryFormat::ChannelsLast));
  countPackedSpikes(x.numel());
  c10::optional<at::Tensor> b;
  if (bias.defined())
    b = bias;
  return EventConvFunction::apply(x, weight, b, bits, shape);
}

at::Tensor conv2dOfRepeatedInput(const at::Tensor &step, int64_t steps, const at::Tensor &weight,
                                 const at::Tensor &bias, const Conv2dShape &shape,
                                 RepeatedInputBackward backward) {
  if (backward == RepeatedInputBackward::SumOfSteps) {
    // Autograd's expand gives the step the steps' summed gradient, and a
    // reader may take the step itself (TimeInvariance.h).
    return repeatedOverSteps(
        at::conv2d(step, weight, bias, shape.stride, shape.padding, shape.dilation, shape.groups),
        steps);
  }
  c10::optional<at::Tensor> b;
  if (bias.defined())
    b = bias;
  return RepeatedInputFoldConvFunction::apply(step, weight, b, steps, shape);
}

at::Tensor conv2dSavingSpikeBits(const at::Tensor &x, const at::Tensor &bits,
                                 const at::Tensor &weight, const at::Tensor &bias,
                                 const Conv2dShape &shape) {
  c10::optional<at::Tensor> b;
  if (bias.defined())
    b = bias;
  return SpikeBitsConvFunction::apply(x, weight, b, bits, shape);
}

at::Tensor conv2dDeferringWeightGrad(const at::Tensor &x, const at::Tensor &weight,
                                     const at::Tensor &bias, const Conv2dShape &shape,
                                     WeightGradQueue &queue) {
  return DeferredConvFunction::apply(x, weight, ConvParameters{weight, bias, shape, &queue});
}

} // namespace snn::runtime
