//===- SpikingBlockAutograd.h - A spiking block as a Function ---*- C++ -*-===//
//
// SpikingBlockKernels.h's training forward recorded in the autograd graph as
// one node: BatchNorm with batch statistics (running statistics updated in
// place), the neuron and the max pool. Its backward is the block's fused
// unpool + BPTT + BatchNorm sums, then BatchNorm's input gradient in place.
// The torch::autograd headers stay in SpikingBlockAutograd.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_AUTOGRAD_SPIKINGBLOCKAUTOGRAD_H
#define SNN_RUNTIME_AUTOGRAD_SPIKINGBLOCKAUTOGRAD_H

#include "snn/Runtime/Kernels/SpikingBlockKernels.h"

#include <optional>

namespace snn::runtime {

/// A block's BatchNorm: the node's operands and attributes.
struct BlockNorm {
  at::Tensor weight, bias, runningMean, runningVar;
  double momentum = 0.1, eps = 1e-5;
};

/// What a block computes besides its input.
struct BlockOperands {
  std::optional<BlockNorm> norm;
  NeuronConfig neuron;
  at::Tensor plifWeight; // PLIF's w, else undefined
  std::optional<MaxPoolWindow> pool;
  int64_t *fired = nullptr; // non-null: receives the spikes the forward fired
};

/// The training statistics of the block's BatchNorm over x [T, N, C, H, W]
/// (the [T*N, C, H, W] fold), running statistics updated.
BatchNormForwardResult blockStatistics(const at::Tensor &x, const BlockNorm &norm);

/// The training forward with gradients to x, the BatchNorm's weight and bias
/// and PLIF's w (those that require one). Requires
/// batchNormKernelAvailable() when there is a BatchNorm. `repeatSteps` > 0:
/// x is one step [N, C, H, W] that the block's input repeats over that many
/// steps; its gradient is the steps' summed (a [T, ...] gradient is never
/// held, and BatchNorm's backward runs on the step).
at::Tensor spikingBlockWithGrad(const at::Tensor &x, const BlockOperands &operands,
                                int64_t repeatSteps = 0);

/// Block backwards so far whose BatchNorm backward took its plane sums in
/// the BPTT pass (BatchNormBackwardKernels.h), for the logs and the tests.
int64_t fusedNormBackwards();

} // namespace snn::runtime

#endif // SNN_RUNTIME_AUTOGRAD_SPIKINGBLOCKAUTOGRAD_H
