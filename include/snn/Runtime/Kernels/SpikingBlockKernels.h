//===- SpikingBlockKernels.h - BatchNorm, neuron and pool in one pass -*- C++ -*-===//
//
// A convolutional SNN layer is conv -> BatchNorm -> neuron -> max pool. After
// the convolution, the other three are elementwise chains over the same
// [T, N, C, H, W] tensor: run one op at a time, each writes its whole output
// and the next reads it back (the BatchNorm output, the spikes), about five
// passes over memory in the forward and as many in the backward. A spiking
// block runs them in one pass per (sample, channel) plane: the plane's
// membrane stays in L1 across the T steps, and only the pooled spikes and
// the one-byte argmax are written. The pre-fire potentials H that BPTT needs
// are not kept: the backward recomputes them from the block's input (which
// BatchNorm's backward keeps anyway), a plane or band at a time in cache,
// which costs less than writing and reading back a tensor the input's size.
//
// The forward rounds exactly like the separate ops (the BatchNorm affine as
// ATen rounds it, the neuron through the same functors as NeuronKernels), so
// spikes are bit-identical to the unfused path. The backward computes the
// unpooling and BPTT in one pass, as the separate kernels do; BatchNorm's
// backward is ATen's, or its bit-for-bit reproduction
// (BatchNormBackwardKernels.h) with the plane sums taken in this pass:
// PyTorch's gradients depend on its reductions to the last bit.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_KERNELS_SPIKINGBLOCKKERNELS_H
#define SNN_RUNTIME_KERNELS_SPIKINGBLOCKKERNELS_H

#include "snn/Runtime/Kernels/BatchNormKernels.h"
#include "snn/Runtime/Kernels/MaxPoolKernels.h"
#include "snn/Runtime/Kernels/NeuronKernels.h"

#include <ATen/core/Tensor.h>
#include <cstdint>
#include <optional>

namespace snn::runtime {

/// The parts of one block: the BatchNorm's affine (absent: the neuron takes
/// the input as it is), the neuron, and the max pool (absent: the output is
/// the spikes).
struct SpikingBlock {
  std::optional<ChannelAffine> affine;
  NeuronConfig neuron;
  double k = 0.0; // PLIF's decay sigmoid(w)
  std::optional<MaxPoolWindow> pool;
};

/// Whether x [T, N, C, H, W] holds every step as a dense channels-last
/// (NHWC) image batch, as a channels-last conv2d writes it, or one such step
/// repeated over T (stride 0).
bool channelsLastSteps(const at::Tensor &x);

/// Whether the block kernels take this input: float32 CPU [T, N, C, H, W],
/// contiguous, channels-last steps (channelsLastSteps), or either's one step
/// repeated over T (stride 0, an input that is the same at every step); a
/// pool (if any) that fits the plane. The output, the saved argmax and the
/// input's gradient take the input's layout.
bool spikingBlockApplies(const at::Tensor &x, const SpikingBlock &block);

struct SpikingBlockForwardResult {
  at::Tensor output; // spikes, or pooled spikes [T, N, C, OH, OW]
  at::Tensor argmax; // uint8 window offsets of the pool, if saved and pooled
  int64_t fired = 0; // spikes the neuron fired, before the pool (FiringCounts.h)
};

/// Runs the block over x [T, N, C, H, W]. `save`: also keep what the
/// backward needs besides x (the argmax of a pool).
SpikingBlockForwardResult spikingBlockForward(const at::Tensor &x,
                                              const SpikingBlock &block,
                                              bool save);

struct SpikingBlockBackwardResult {
  at::Tensor gradInput; // dL/d(neuron input) [T, N, C, H, W], or [N, C, H, W] summed over T
  double gradK = 0.0;   // PLIF: dL/dw of k = sigmoid(w)
};

/// Where the backward also leaves BatchNorm's plane sums of dL/d(input)
/// (batchNormPlaneSums per plane of the [T * N, C] fold, with the channel's
/// batch mean; on NHWC steps BatchNormPixelSums, the same bits), for
/// batchNormTrainingBackward: the sums are taken while each plane's (or
/// band's) gradient is still in cache, instead of in a pass of their own
/// over the gradient and the input.
struct BlockNormSums {
  const float *mean; // [C]
  float *sum, *dot;  // [T * N * C] each ([N * C] summed over T)
};

/// The unpooling and BPTT of the block from dL/d(output), with the forward's
/// saved `argmax`. `x` is the block's input, from which the backward
/// recomputes H (the forward's bits), and which PLIF's dL/dk and `norm`'s
/// sums read. `sumOverSteps` (x one step repeated over T, stride 0): the
/// gradient of that step, the T steps' gradients added in step order, and
/// `norm`'s sums of it; no [T, ...] gradient is held, one band's at a time.
SpikingBlockBackwardResult spikingBlockBackward(const at::Tensor &gradOutput,
                                                const at::Tensor &argmax, const at::Tensor &x,
                                                const SpikingBlock &block,
                                                const BlockNormSums *norm = nullptr,
                                                bool sumOverSteps = false);

} // namespace snn::runtime

#endif // SNN_RUNTIME_KERNELS_SPIKINGBLOCKKERNELS_H
