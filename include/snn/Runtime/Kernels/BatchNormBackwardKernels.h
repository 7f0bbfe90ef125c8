//===- BatchNormBackwardKernels.h - Training BatchNorm backward -*- C++ -*-===//
//
// ATen's training BatchNorm backward, reproduced bit for bit so that it can
// take its per-plane sums from a pass that already holds the gradient (the
// spiking block's BPTT writes dL/d(BatchNorm output) one plane at a time).
// ATen reduces each (sample, channel) plane with its vector code: lanes of
// its CPU capability's width, the tail added into the first lanes, the lanes
// folded pairwise, the dot product's multiply-add fused or not as its
// compiler chose; the planes' results are added in double in sample order.
// Those choices are not visible from outside, so the first call probes ATen
// on a fixed input and uses the variant that reproduces it, or none
// (batchNormBackwardKernelAvailable() false: callers keep ATen's backward).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_KERNELS_BATCHNORMBACKWARDKERNELS_H
#define SNN_RUNTIME_KERNELS_BATCHNORMBACKWARDKERNELS_H

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>

namespace snn::runtime {

/// Whether this backward reproduces ATen's on this machine (probed once).
bool batchNormBackwardKernelAvailable();

/// Whether batchNormTrainingBackward takes x: float32 CPU [B, C, H, W] or
/// [T, N, C, H, W] whose steps are dense NCHW, contiguous or one step
/// repeated over T (stride 0), with at least 16 elements per plane (ATen
/// reduces shorter planes another way).
bool batchNormBackwardKernelApplies(const at::Tensor &x);

/// One (sample, channel) plane's sum(dy) and sum((x - mean) * dy), rounded
/// as ATen's backward computes them. Requires batchNormBackwardKernelAvailable().
void batchNormPlaneSums(const float *dy, const float *x, float mean, int64_t image,
                        float &sum, float &dot);

/// Per plane of the [B, C] fold (plane b * C + c), what batchNormPlaneSums gives.
struct BatchNormPlaneTotals {
  const float *sum;
  const float *dot;
};

struct BatchNormBackwardResult {
  at::Tensor gradInput, gradWeight, gradBias; // undefined where the mask is false
};

/// at::native_batch_norm_backward(gradOutput, x, weight, -, -, mean, invstd,
/// train=true, eps, mask) on the [B, C, ...] fold of x, bit for bit.
/// gradOutput: contiguous, x's shape. `planes`: the plane sums if the caller
/// has them (else computed here). `inPlace`: gradInput overwrites
/// gradOutput. Requires batchNormBackwardKernelAvailable() and
/// batchNormBackwardKernelApplies(x).
BatchNormBackwardResult batchNormTrainingBackward(const at::Tensor &gradOutput,
                                                  const at::Tensor &x, const at::Tensor &weight,
                                                  const at::Tensor &mean,
                                                  const at::Tensor &invstd,
                                                  std::array<bool, 3> mask,
                                                  const BatchNormPlaneTotals *planes = nullptr,
                                                  bool inPlace = false);

} // namespace snn::runtime

#endif // SNN_RUNTIME_KERNELS_BATCHNORMBACKWARDKERNELS_H
