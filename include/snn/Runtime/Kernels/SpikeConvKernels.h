//===- SpikeConvKernels.h - Convolutions fed by spikes -----------*- C++ -*-===//
//
// A conv2d after a neuron reads spikes: each output is the bias plus, for
// every active input its taps read (channel c at y, x), the weight W[o, c, ky,
// kx]: additions in proportion to the spikes instead of a multiply-add per
// input. The forward lists each input pixel's active channels, then sums, for
// each output pixel and block of up to 64 output channels, the weight rows of
// those inputs in vector registers, written channels-last. The weight
// gradient of training lists each channel's active pixels (from the input
// kept as bits) and sums, per input channel and block of output channels,
// the output-gradient rows its taps reached, all taps' sums in registers.
// Each kernel has an AVX-512, an AVX2 and a baseline version, chosen by the
// CPU. The additions run in another order than oneDNN's dense convolution, so
// results are within the float32 bound of the same sums, not bit-equal
// (docs/semantics.md); the order depends on the data alone, so not on the
// thread count. Faster than oneDNN only at low densities
// (snn-bench-spike-conv; docs/benchmarks.md): opt-in (snn-run
// --spike-conv-density).
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
/// spikeDensity tells them) (groups 1; bias may be undefined): y [B, O, OH,
/// OW] as sums of the active inputs' weight taps, channels-last if x is and
/// contiguous otherwise, as a dense convolution's output.
at::Tensor spikeConv2dForward(const at::Tensor &x, const at::Tensor &weight, const at::Tensor &bias,
                              const SpikeConvGeometry &geometry);

/// dL/dW [O, C, kH, kW] of conv2d(x, W) for spikes x [B, C, H, W] kept as
/// `bits` (SpikeBits.h, packed in NHWC order: a channels-last x's memory
/// order) and grad = dL/dy [B, O, OH, OW]: for every input that fired, the
/// gradient rows (all O channels) of the outputs each tap reached, added
/// without multiplies, in sample then pixel order: the same result for any
/// thread count, within the float32 bound of the dense weight gradient's
/// sums (another order).
at::Tensor spikeConv2dWeightGrad(const at::Tensor &bits, at::IntArrayRef inputSizes,
                                 const at::Tensor &grad, at::IntArrayRef weightSizes,
                                 const SpikeConvGeometry &geometry);

/// The instruction sets the kernels have a version for, in order: the one
/// the CPU supports best runs unless useSpikeConvInstructions picks a lower
/// one (the tests run each version the CPU can).
enum class SpikeConvInstructions { Baseline, Avx2, Avx512 };
SpikeConvInstructions bestSpikeConvInstructions();
/// Throws Error if the CPU lacks `set`.
void useSpikeConvInstructions(SpikeConvInstructions set);
SpikeConvInstructions spikeConvInstructions();

/// The process's choice (snn-run --spike-conv-density): conv2d layers whose
/// input is spikes with at most this share of ones take the event-driven
/// kernels; 0 keeps every conv2d dense; kMeasuredDensity (EventKernelDensity.h),
/// the default: up to the crossover measured per layer shape.
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
