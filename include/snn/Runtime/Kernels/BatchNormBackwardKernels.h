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
#include <vector>

namespace snn::runtime {

/// Whether this backward reproduces ATen's on this machine (probed once).
bool batchNormBackwardKernelAvailable();

/// Whether batchNormTrainingBackward takes x: float32 CPU [B, C, H, W] or
/// [T, N, C, H, W] whose steps are dense NCHW or dense channels-last (NHWC),
/// every step or one step repeated over T (stride 0), with at least 16
/// elements per plane (ATen reduces shorter planes another way). On NHWC
/// input the result is what ATen gives for the same values in NCHW.
bool batchNormBackwardKernelApplies(const at::Tensor &x);

/// One (sample, channel) plane's sum(dy) and sum((x - mean) * dy), rounded
/// as ATen's backward computes them. Requires batchNormBackwardKernelAvailable().
void batchNormPlaneSums(const float *dy, const float *x, float mean, int64_t image,
                        float &sum, float &dot);

/// batchNormPlaneSums of the C planes of one image stored channels-last
/// (NHWC): each channel's pixels go into ATen's lanes in the order its plane
/// holds them, so the sums are the planes' bit for bit. Pixels are added in
/// increasing order, in runs of any length (a band of image rows at a time).
/// Requires batchNormBackwardKernelAvailable().
class BatchNormPixelSums {
public:
  BatchNormPixelSums(int64_t channels, int64_t image);
  /// Pixels [first, first + count) of the image: C floats each from dy and x.
  void add(const float *dy, const float *x, const float *mean, int64_t first, int64_t count);
  /// The image's sums per channel into sum[0, C) and dot[0, C); starts over.
  void finish(float *sum, float *dot);

private:
  int64_t channels, image;
  int lanes;
  bool fmaDot, pairwise;
  std::vector<float> sums, dots; // [lanes][channels]
};

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
/// gradOutput: x's shape and layout (NCHW or NHWC steps). `planes`: the plane sums if the caller
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
