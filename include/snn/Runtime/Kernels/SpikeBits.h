//===- SpikeBits.h - Spike tensors stored as bits ----------------*- C++ -*-===//
//
// A layer fed by a neuron keeps its input for the weight gradient. That input
// is spikes, exact zeros and ones, so one bit per value holds it: 1/32 of the
// float32 tensor between the forward and the backward, unpacked to the same
// floats when the backward needs them.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_KERNELS_SPIKEBITS_H
#define SNN_RUNTIME_KERNELS_SPIKEBITS_H

#include <ATen/core/Tensor.h>

#include <optional>

namespace snn::runtime {

/// The share of ones in a dense float32 CPU tensor x (contiguous, or a
/// channels-last [N, C, H, W]: values in memory order) whose every value is +0
/// or 1 (what a neuron or a max pool of spikes produces; -0 is not: it would
/// come back as +0), or nullopt for any other tensor.
std::optional<double> spikeDensity(const at::Tensor &x);

/// Whether spikeDensity(x) has a value.
bool isSpikeTensor(const at::Tensor &x);

/// x's values as bits, eight per byte, the first value in the lowest bit, in
/// one pass that also checks them: nullopt when x is not a spike tensor.
std::optional<at::Tensor> packSpikeBitsIfSpikes(const at::Tensor &x);

/// packSpikeBitsIfSpikes for an x known to be spikes (throws Error if not).
at::Tensor packSpikeBits(const at::Tensor &x);

/// The float32 tensor of `sizes` that packSpikeBits packed, in the memory
/// format the packed tensor had (the bits follow memory order).
at::Tensor unpackSpikeBits(const at::Tensor &bits, at::IntArrayRef sizes,
                           at::MemoryFormat format = at::MemoryFormat::Contiguous);

/// Process-wide switch (snn-run --no-spike-bits); on by default.
void setSpikeBitsEnabled(bool enabled);
bool spikeBitsEnabled();

/// Tensors packed so far, and their bytes as float32 and as bits.
struct SpikeBitsCounts {
  int64_t tensors = 0, floatBytes = 0, bitBytes = 0;
};
SpikeBitsCounts spikeBitsCounts();
/// Counts one packed tensor of `values` values.
void countPackedSpikes(int64_t values);

} // namespace snn::runtime

#endif // SNN_RUNTIME_KERNELS_SPIKEBITS_H
