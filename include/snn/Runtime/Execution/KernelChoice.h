//===- KernelChoice.h - Kernel flags of the commands that run programs -*- C++ -*-===//
#ifndef SNN_RUNTIME_EXECUTION_KERNELCHOICE_H
#define SNN_RUNTIME_EXECUTION_KERNELCHOICE_H

#include "snn/Runtime/Kernels/EventKernelDensity.h"

namespace snn::runtime {

/// The kernel choices of train, eval and infer.
struct KernelChoice {
  /// --spike-linear-density: Linear layers fed spikes with at most this share of ones run
  /// the event-driven kernels (SpikeLinearAutograd.h); 0 keeps every Linear dense;
  /// kMeasuredDensity (auto, the default): each layer shape's crossover on this machine
  /// (EventKernelChoice.h).
  double spikeLinearDensity = kMeasuredDensity;
  /// --spike-conv-density: the same for conv2d layers (SpikeConvKernels.h;
  /// eventConv2dWithGrad in training).
  double spikeConvDensity = kMeasuredDensity;
  /// false with --no-fusion: every node runs alone and on every step, no
  /// spiking blocks (SpikingBlockFusion.h) and no one-step conv2d
  /// (TimeInvariance.h).
  bool fusion = true;
  /// false with --no-spike-bits: conv2d keeps a spike input as float32 for
  /// its backward instead of as bits (SpikeBits.h).
  bool spikeBits = true;
  /// false with --no-channels-last: conv2d reads and writes NCHW tensors
  /// instead of channels-last ones (ConvolutionLayout.h).
  bool channelsLast = true;
};

/// Makes `choice` the process's (call before running a program).
void applyKernelChoice(const KernelChoice &choice);

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_KERNELCHOICE_H
