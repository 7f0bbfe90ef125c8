//===- ConvolutionLayout.h - Channels-last convolution chains -*- C++ -*-===//
//
// oneDNN convolves in a blocked layout: on a plain NCHW tensor ATen reorders
// the input into it and the output back out, each call, forward and
// backward (on the VGG, 22 % of an inference batch and 13 % of a training
// step were those reorders). On a channels-last (NHWC) input it reads and
// writes NHWC directly. So conv2d hands oneDNN its input channels-last; its
// output stays NHWC, the spiking block after it runs on NHWC
// (SpikingBlockKernels.h) and writes pooled NHWC spikes for the next
// conv2d, and a layer that needs planes reads through contiguous() or
// reshape(), which reorder once. Values are the same tensors; only the
// convolution's own summation order differs from the NCHW kernel's (float32
// rounding, as any other convolution algorithm would).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_CONVOLUTIONLAYOUT_H
#define SNN_RUNTIME_EXECUTION_CONVOLUTIONLAYOUT_H

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace snn::runtime {

/// Process-wide switch (snn-run --no-channels-last); on by default.
void setChannelsLastConvolutionEnabled(bool enabled);
bool channelsLastConvolutionEnabled();

/// x [N, C, H, W] as a conv2d should read it: channels-last when the switch
/// is on and x is a float32 CPU tensor (a copy unless it already is), else x.
at::Tensor convolutionInput(const at::Tensor &x);

/// conv2d calls so far that ran channels-last.
int64_t channelsLastConvolutions();

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_CONVOLUTIONLAYOUT_H
