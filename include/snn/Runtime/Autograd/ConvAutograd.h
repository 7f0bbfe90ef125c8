//===- ConvAutograd.h - conv2d with its weight gradient deferred -*- C++ -*-===//
//
// The conv2d of a split backward (zero-bubble pipelines, WeightGradQueue.h):
// backward computes the input's gradient now and queues the weight and bias
// gradients, each from at::convolution_backward as autograd's
// ConvolutionBackward node calls it, so the values are autograd's. Also the
// conv2d of a spike input kept as bits.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_AUTOGRAD_CONVAUTOGRAD_H
#define SNN_RUNTIME_AUTOGRAD_CONVAUTOGRAD_H

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>

namespace snn::runtime {

class WeightGradQueue;

struct Conv2dShape {
  std::array<int64_t, 2> stride{1, 1}, padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
};

/// How the backward of a conv2d of a repeated input (below) computes its gradients.
enum class RepeatedInputBackward {
  /// Convolves the step with the sum of the T steps' gradients (autograd's: a
  /// conv2d of the step, expanded): the same gradients as the [T*N] fold's up
  /// to the order of their sums, at 1/T of the work and memory.
  SumOfSteps,
  /// Convolves the [T*N] fold, as PyTorch's node does: its gradients bit for bit (the
  /// weight's is a sum over T*N samples whose order the fold fixes).
  Fold,
};

/// The conv2d of x [T, N, C, H, W] whose steps all equal `step` [N, C, H,
/// W] (TimeInvariance.h), recorded with grad mode on: the forward convolves
/// `step` once and returns it repeated over T (a stride-0 view); the
/// backward as `backward` says.
at::Tensor conv2dOfRepeatedInput(const at::Tensor &step, int64_t steps, const at::Tensor &weight,
                                 const at::Tensor &bias, const Conv2dShape &shape,
                                 RepeatedInputBackward backward);

/// at::conv2d(x, weight, bias, ...) for spikes x [N, C, H, W] (bias may be
/// undefined), recorded with grad mode on, with x kept as `bits`
/// (packSpikeBits(x), SpikeBits.h: 1/32 of its float32 bytes) until the
/// backward, which unpacks it and calls at::convolution_backward as
/// autograd's ConvolutionBackward node does: the same gradients.
at::Tensor conv2dSavingSpikeBits(const at::Tensor &x, const at::Tensor &bits,
                                 const at::Tensor &weight, const at::Tensor &bias,
                                 const Conv2dShape &shape);

/// conv2d(x, weight, bias, ...) for spikes x [N, C, H, W] (groups 1; bias
/// may be undefined) on the event-driven kernels (SpikeConvKernels.h),
/// recorded with grad mode on: forward the active inputs' weight taps,
/// backward x's gradient dense and the weight's over the spikes, kept as
/// bits. Within float32 rounding of at::conv2d and its gradients.
at::Tensor eventConv2dWithGrad(const at::Tensor &x, const at::Tensor &weight,
                               const at::Tensor &bias, const Conv2dShape &shape);

/// at::conv2d(x, weight, bias, ...) for x [N, C, H, W] (bias may be
/// undefined), recorded with grad mode on; backward returns x's gradient and
/// queues the parameters' in `queue`.
at::Tensor conv2dDeferringWeightGrad(const at::Tensor &x, const at::Tensor &weight,
                                     const at::Tensor &bias, const Conv2dShape &shape,
                                     WeightGradQueue &queue);

} // namespace snn::runtime

#endif // SNN_RUNTIME_AUTOGRAD_CONVAUTOGRAD_H
