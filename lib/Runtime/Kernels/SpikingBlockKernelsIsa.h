//===- SpikingBlockKernelsIsa.h - Per-ISA entry points of the blocks -*- C++ -*-===//
//
// Private to the runtime: the raw spiking-block loops (SpikingBlockKernelsImpl.h)
// compiled for each instruction set; SpikingBlockKernels.cpp dispatches
// between them as NeuronKernels.cpp does for the neurons.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_SPIKINGBLOCKKERNELSISA_H
#define SNN_RUNTIME_SPIKINGBLOCKKERNELSISA_H

#include "snn/Runtime/Kernels/MaxPoolKernels.h"
#include "snn/Runtime/Kernels/NeuronKernels.h"

#include <cstdint>

namespace snn::runtime {

/// A block's sizes: `planes` = N * C planes of height x width per step; the
/// pooled plane is outHeight x outWidth (the plane itself without a pool).
/// `inputStepStride`: elements between the input's steps, planes * height *
/// width, or 0 for an input that is the same at every step.
/// `channelsLast`: every step holds N images of height x width pixels of C
/// channels each (NHWC, the layout of a channels-last convolution's output),
/// and so do the output and the argmax; otherwise N * C planes (NCHW).
struct BlockDims {
  int64_t steps, planes, channels, height, width, inputStepStride;
  bool pooled;
  MaxPoolWindow pool;
  int64_t outHeight, outWidth;
  bool channelsLast = false;
  int64_t image() const { return height * width; }
  int64_t outImage() const { return outHeight * outWidth; }
  int64_t samples() const { return planes / channels; }
};

/// Per-channel y = x * scale + shift (scale 1, shift 0 without a BatchNorm).
struct BlockAffine {
  const float *scale;
  const float *shift;
  bool fma;
};

/// What the backward reads and writes.
struct BlockGradients {
  const float *gradOutput;
  const uint8_t *argmax; // null without a pool
  /// The block's input: the backward recomputes the pre-fire potentials H
  /// from it, and reads it for PLIF's dL/dk and BatchNorm's plane sums.
  const float *x;
  float *gradInput;
  /// Non-null: also each gradInput plane's BatchNorm sums (batchNormPlaneSums
  /// with the channel's normMean, or BatchNormPixelSums on NHWC steps), per
  /// plane of the [T * N, C] fold.
  const float *normMean = nullptr;
  float *normSum = nullptr, *normDot = nullptr;
  /// The input repeats one step over T (inputStepStride 0) and gradInput is
  /// that step's: the steps' gradients added in step order, ((g0 + g1) + g2)
  /// ..., and the BatchNorm sums (per plane of the [N, C] fold) of that sum.
  bool sumSteps = false;
};

#define SNN_DECLARE_BLOCK_KERNELS                                                  \
  int64_t blockForward(const NeuronConfig &config, float k, const BlockDims &dims, \
                       const BlockAffine &affine, const float *x, float *output,   \
                       uint8_t *argmax);                                           \
  double blockBackward(const NeuronConfig &config, float k, const BlockDims &dims, \
                       const BlockAffine &affine, const BlockGradients &grads);

namespace baseline {
SNN_DECLARE_BLOCK_KERNELS
} // namespace baseline

namespace avx2 {
SNN_DECLARE_BLOCK_KERNELS
} // namespace avx2

#undef SNN_DECLARE_BLOCK_KERNELS

} // namespace snn::runtime

#endif // SNN_RUNTIME_SPIKINGBLOCKKERNELSISA_H
