//===- MaxPoolKernels.h - Max pooling with a one-byte argmax ----*- C++ -*-===//
//
// ATen 1.13's CPU max_pool2d is a scalar loop that recomputes indices per
// element and writes an int64 index per output: in the CSNN and VGG training
// steps it cost more than the convolutions around it. These kernels cover the
// pools the models use (no padding, no dilation, floor mode) with a tight
// loop and keep the argmax as the offset inside the window (one byte).
// Results equal ATen's bit for bit: the first maximum in row-major window
// order wins, a NaN wins over any number and a later NaN over an earlier one,
// and the backward adds each gradient to +0 at the argmax (as ATen does).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_KERNELS_MAXPOOLKERNELS_H
#define SNN_RUNTIME_KERNELS_MAXPOOLKERNELS_H

#include <ATen/core/Tensor.h>
#include <cstdint>

namespace snn::runtime {

struct MaxPoolWindow {
  int64_t kernelH = 2, kernelW = 2;
  int64_t strideH = 2, strideW = 2;
};

/// Whether these kernels handle the pool (otherwise use ATen's): padding 0,
/// dilation 1, floor mode, a window of at most 256 elements.
bool maxPoolKernelApplies(at::IntArrayRef kernel, at::IntArrayRef stride,
                          at::IntArrayRef padding, at::IntArrayRef dilation,
                          bool ceilMode);

struct MaxPoolForwardResult {
  at::Tensor output; // [B, C, OH, OW]
  at::Tensor argmax; // uint8 offset kh * kernelW + kw, or undefined
};

/// Pools x [B, C, H, W] (float32 or float64 CPU; made contiguous). The
/// argmax is computed only if `saveArgmax`.
MaxPoolForwardResult maxPoolForward(const at::Tensor &x,
                                    const MaxPoolWindow &window,
                                    bool saveArgmax);

/// dL/dx of shape `inputSizes` from dL/doutput and the forward's argmax.
at::Tensor maxPoolBackward(const at::Tensor &gradOutput,
                           const at::Tensor &argmax, at::IntArrayRef inputSizes,
                           const MaxPoolWindow &window);

} // namespace snn::runtime

#endif // SNN_RUNTIME_KERNELS_MAXPOOLKERNELS_H
