//===- SpikeConvKernels.h - Convolutions fed by spikes -----------*- C++ -*-===//
//
// A conv2d after a neuron reads spikes: its output is the bias plus, for every
// active input (channel c at y, x), the weight taps W[:, c, ky, kx] added at the
// output positions that tap reaches. Work in proportion to the spikes (20-30 %
// in the zoo's networks) and additions instead of multiply-adds. The output
// is accumulated channels-last, so each tap adds one contiguous row of the
// output channels, then transposed to [B, O, OH, OW]. The additions run in
// another order than oneDNN's dense convolution, so results are within the
// float32 bound of the same sums, not bit-equal (docs/semantics.md): the path
// is opt-in (snn-run --spike-conv-density). The weight gradient of training
// runs over the active inputs likewise, from the input kept as bits.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_KERNELS_SPIKECONVKERNELS_H
#define SNN_RUNTIME_KERNELS_SPIKECONVKERNELS_H

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <optional>

namespace snn::runtime {

struct SpikeConvGeometry {
  std::array<int64_t, 2> stride{1, 1}, padding{0, 0}, dilation{1, 1};
};

/// conv2d(x, weight, bias) for spikes x [B, C, H, W] (SpikeBits.h's
/// spikeDensity tells them) (groups 1; bias may be
/// undefined): y [B, O, OH, OW] as sums of the active inputs' weight taps.
at::Tensor spikeConv2dForward(const at::Tensor &x, const at::Tensor &weight,
                              const at::Tensor &bias, const SpikeConvGeometry &geometry);

/// dL/dW [O, C, kH, kW] of conv2d(x, W) for spikes x [B, C, H, W] kept as
/// `bits` (SpikeBits.h, packed in NHWC order: a channels-last x's memory
/// order) and grad = dL/dy [B, O, OH, OW]: for every input that fired, the
/// gradient rows (all O channels) of the outputs each tap reached, added
/// without multiplies. Partial sums of four samples each, added in sample
/// order: the same result for any thread count, within the float32 bound of
/// the dense weight gradient's sums (another order).
at::Tensor spikeConv2dWeightGrad(const at::Tensor &bits, at::IntArrayRef inputSizes,
                                 const at::Tensor &grad, at::IntArrayRef weightSizes,
                                 const SpikeConvGeometry &geometry);

/// The process's choice (snn-run --spike-conv-density): conv2d layers whose
/// input is spikes with at most this share of ones take the event-driven
/// kernels; 0, the default, keeps every conv2d dense; kMeasuredDensity
/// (EventKernelChoice.h): up to the crossover measured per layer shape.
void setSpikeConvMaxDensity(double density);
double spikeConvMaxDensity();

/// conv2d calls on the spike kernel so far, and those that were dense.
struct SpikeConvCounts {
  int64_t calls = 0, dense = 0;
};
SpikeConvCounts spikeConvCounts();
void countSpikeConv(bool onSpikes);

} // namespace snn::runtime

#endif // SNN_RUNTIME_KERNELS_SPIKECONVKERNELS_H
