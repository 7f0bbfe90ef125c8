//===- BatchNormKernels.h - Training BatchNorm forward, fast ----*- C++ -*-===//
//
// ATen 1.13 computes BatchNorm's training statistics with one serial double
// addition chain per channel (latency-bound: in the CSNN step it cost as
// much as the convolution before it). This forward computes the same sums
// in the same order per channel but runs eight channels' chains at once, so
// mean, invstd, running statistics and output equal ATen's bit for bit.
// The rounding details ATen's build picked (whether its vector code fused
// x * alpha + beta into an FMA, ...) are not visible from outside: the first
// call probes ATen on a fixed input and uses the matching variant, or none
// (batchNormKernelAvailable() false: callers keep ATen's batch_norm).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_KERNELS_BATCHNORMKERNELS_H
#define SNN_RUNTIME_KERNELS_BATCHNORMKERNELS_H

#include <ATen/core/Tensor.h>

#include <optional>

namespace snn::runtime {

/// Whether this forward reproduces ATen's on this machine (probed once).
bool batchNormKernelAvailable();

/// Whether the forward handles these operands: float32 CPU, x [B, C, ...]
/// contiguous, or a dense channels-last [B, C, H, W] (its statistics sum
/// fixed chunks of pixels and add the chunks in order: the planes' double
/// sums to double rounding, about 1e-16 relative, so the float32 statistics
/// are the planes' bits but for a rare last bit; BatchNormKernels.cpp), with
/// more than one element per (sample, channel), weight, bias
/// and running statistics defined, float32 [C]. The output takes x's layout.
bool batchNormKernelApplies(const at::Tensor &x, const at::Tensor &weight,
                            const at::Tensor &bias,
                            const at::Tensor &runningMean,
                            const at::Tensor &runningVar);

struct BatchNormForwardResult {
  at::Tensor output;
  at::Tensor mean;   // [C], what ATen saves for its backward
  at::Tensor invstd; // [C]
};

/// at::native_batch_norm(x, weight, bias, runningMean, runningVar,
/// training=true, momentum, eps), running statistics updated in place.
BatchNormForwardResult batchNormTrainingForward(
    const at::Tensor &x, const at::Tensor &weight, const at::Tensor &bias,
    const at::Tensor &runningMean, const at::Tensor &runningVar,
    double momentum, double eps);

/// The statistics alone (mean, invstd; running statistics updated in place)
/// as batchNormTrainingForward computes them; `output` stays undefined.
/// `repeats` > 1: the statistics of `repeats` copies of x along its batch
/// (a time-invariant input): x's sums times `repeats`, over the copies'
/// count. For repeats a power of two that product is exact, so the float
/// mean and variance differ from summing the copies one by one only where
/// the double sums round differently (about 1e-16 relative).
BatchNormForwardResult batchNormTrainingStatistics(const at::Tensor &x,
                                                   const at::Tensor &runningMean,
                                                   const at::Tensor &runningVar,
                                                   double momentum, double eps,
                                                   int64_t repeats = 1);

/// y = x * scale[c] + shift[c] per channel, rounded once (`fma`) or twice,
/// as ATen's BatchNorm computes its output on this machine.
struct ChannelAffine {
  at::Tensor scale; // float32 [C]
  at::Tensor shift; // float32 [C]
  bool fma = false;
};

/// The training forward's affine from the batch statistics. Requires
/// batchNormKernelAvailable().
ChannelAffine batchNormTrainingAffine(const at::Tensor &mean, const at::Tensor &invstd,
                                      const at::Tensor &weight, const at::Tensor &bias);

/// Inference's affine from the running statistics, as ATen's eval-mode
/// batch_norm rounds it (probed once, like the training forward); nullopt
/// when no variant reproduces ATen here.
std::optional<ChannelAffine> batchNormInferenceAffine(const at::Tensor &weight,
                                                      const at::Tensor &bias,
                                                      const at::Tensor &runningMean,
                                                      const at::Tensor &runningVar,
                                                      double eps);

} // namespace snn::runtime

#endif // SNN_RUNTIME_KERNELS_BATCHNORMKERNELS_H
