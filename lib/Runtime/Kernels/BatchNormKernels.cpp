//===- BatchNormKernels.cpp - Training BatchNorm forward, fast ------------===//
//
// ATen's per-channel loops, reproduced: the mean is a double sum of the
// channel's floats in (sample, pixel) order, divided by the count and
// rounded to float; the variance sum adds float (x - mean)^2 in double in the
// same order. Running kChains channels side by side gives independent
// addition chains without changing any chain's order. Channels-last inputs
// sum in chunks of pixels instead (see channelsLastStats). This file is built
// with -ffp-contract=off: the only fused multiply-adds are the explicit ones
// of the variant the probe selected.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Kernels/BatchNormKernels.h"
#include "RoundingProbe.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/Parallel.h>
#include <ATen/ops/batch_norm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/native_batch_norm.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

namespace snn::runtime {

namespace {

/// The roundings ATen's build may have chosen (its compiler may contract
/// a * b + c in vector code), fixed by the probe.
struct Rounding {
  bool fmaOutput = false;     // y = fma(x, alpha, beta)
  bool fmaShift = false;      // beta = bias - mean * alpha, rounded once
  bool floatMomentum = false; // running update with a float momentum
};

constexpr int64_t kChains = 8;

struct Layout {
  int64_t batch, channels, image;
  /// The tensor is this many copies of x along the batch (a time-invariant
  /// input, TimeInvariance.h): its sums are `repeats` times x's.
  int64_t repeats = 1;
  /// NHWC: each of the batch * image pixels holds the channels side by side.
  bool channelsLast = false;
  int64_t count() const { return repeats * batch * image; }
};

/// Sums of channels [c0, c0 + K): ATen's order within each channel.
template <int K>
void channelStats(const float *x, const Layout &layout, int64_t c0,
                  float *mean, float *varSum) {
  const int64_t image = layout.image;
  double sum[K] = {};
  for (int64_t n = 0; n < layout.batch; ++n) {
    const float *base = x + (n * layout.channels + c0) * image;
    for (int64_t i = 0; i < image; ++i)
      for (int k = 0; k < K; ++k)
        sum[k] += double(base[k * image + i]);
  }
  float m[K];
  const double repeats = double(layout.repeats);
  for (int k = 0; k < K; ++k)
    mean[c0 + k] = m[k] = float(sum[k] * repeats / double(layout.count()));
  double var[K] = {};
  for (int64_t n = 0; n < layout.batch; ++n) {
    const float *base = x + (n * layout.channels + c0) * image;
    for (int64_t i = 0; i < image; ++i)
      for (int k = 0; k < K; ++k) {
        float d = base[k * image + i] - m[k];
        var[k] += double(d * d);
      }
  }
  for (int k = 0; k < K; ++k)
    varSum[c0 + k] = float(var[k] * repeats);
}

/// Eight floats, eight doubles: one value each (GCC's vector extension),
/// eight channels' independent chains side by side.
typedef float Float8 __attribute__((vector_size(32)));
typedef double Double8 __attribute__((vector_size(64)));

// NHWC statistics. ATen's planes order (one double chain per channel over
// every pixel) would have each thread read its channels' part of every
// pixel: two threads then read 2x slower than one (11 ms a pass over the
// VGG's 75 MB first block, against 5.5-7.8 ms for one thread and 3.1-4.2 ms
// for two threads reading disjoint pixel ranges). So the pixels go in fixed
// chunks of kStatsChunkBytes, each chunk's sums in double in pixel order, and
// the chunks' sums are added in chunk order: the order depends on the shape
// only, never on the thread count, and the sums differ from the planes' by
// double rounding (about 1e-16 relative), far below the float32 mean and
// variance they round to. (NCHW planes keep ATen's order: there they are
// PyTorch's bits; an NHWC step differs from PyTorch in its convolution's
// rounding anyway.)
constexpr int64_t kStatsChunkBytes = 256 << 10;
/// Channels per run of one chunk's pixels: eight Double8 chains.
constexpr int64_t kStatsRunChannels = 64;

/// Sums over pixels [p0, p1) of channels [c0, c0 + 8 * eights) into out[c]:
/// of the values (Squares false) or of their float squared distance from
/// `mean` (true), each term as ATen rounds it.
template <bool Squares>
void pixelRunSums(const float *x, int64_t channels, int64_t p0, int64_t p1, int64_t c0,
                  int64_t eights, const float *mean, double *out) {
  Double8 sum[kStatsRunChannels / 8] = {};
  Float8 m[kStatsRunChannels / 8] = {};
  if (Squares)
    for (int64_t j = 0; j < eights; ++j)
      std::memcpy(&m[j], mean + c0 + 8 * j, sizeof(Float8));
  for (int64_t p = p0; p < p1; ++p) {
    const float *row = x + p * channels + c0;
    for (int64_t j = 0; j < eights; ++j) {
      Float8 v;
      std::memcpy(&v, row + 8 * j, sizeof(v));
      if (Squares) {
        Float8 d = v - m[j];
        v = d * d;
      }
      sum[j] += __builtin_convertvector(v, Double8);
    }
  }
  for (int64_t j = 0; j < eights; ++j)
    for (int k = 0; k < 8; ++k)
      out[c0 + 8 * j + k] = sum[j][k];
}

/// pixelRunSums for channels [c0, channels), fewer than eight.
template <bool Squares>
void pixelTailSums(const float *x, int64_t channels, int64_t p0, int64_t p1, int64_t c0,
                   const float *mean, double *out) {
  for (int64_t c = c0; c < channels; ++c) {
    double sum = 0.0;
    for (int64_t p = p0; p < p1; ++p) {
      float v = x[p * channels + c];
      if (Squares) {
        float d = v - mean[c];
        v = d * d;
      }
      sum += double(v);
    }
    out[c] = sum;
  }
}

/// Per channel, the chunks' sums added in chunk order.
template <bool Squares>
std::vector<double> channelsLastSums(const float *x, const Layout &layout, const float *mean) {
  const int64_t channels = layout.channels, pixels = layout.batch * layout.image;
  const int64_t chunkPixels =
      std::max<int64_t>(1, kStatsChunkBytes / (channels * int64_t(sizeof(float))));
  const int64_t chunks = (pixels + chunkPixels - 1) / chunkPixels;
  std::vector<double> partial(size_t(chunks * channels));
  at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t p0 = k * chunkPixels, p1 = std::min(pixels, p0 + chunkPixels);
      double *out = partial.data() + k * channels;
      const int64_t whole = channels / 8 * 8;
      for (int64_t c0 = 0; c0 < whole; c0 += kStatsRunChannels)
        pixelRunSums<Squares>(x, channels, p0, p1, c0,
                              std::min(kStatsRunChannels, whole - c0) / 8, mean, out);
      pixelTailSums<Squares>(x, channels, p0, p1, whole, mean, out);
    }
  });
  std::vector<double> total(size_t(channels), 0.0);
  for (int64_t k = 0; k < chunks; ++k)
    for (int64_t c = 0; c < channels; ++c)
      total[size_t(c)] += partial[size_t(k * channels + c)];
  return total;
}

/// channelStats over an NHWC x: the mean's sums, then the variance's.
void channelsLastStats(const float *x, const Layout &layout, float *mean, float *varSum) {
  const double repeats = double(layout.repeats), count = double(layout.count());
  std::vector<double> sums = channelsLastSums<false>(x, layout, nullptr);
  for (int64_t c = 0; c < layout.channels; ++c)
    mean[c] = float(sums[size_t(c)] * repeats / count);
  std::vector<double> squares = channelsLastSums<true>(x, layout, mean);
  for (int64_t c = 0; c < layout.channels; ++c)
    varSum[c] = float(squares[size_t(c)] * repeats);
}

void collectStats(const float *x, const Layout &layout, float *mean,
                  float *varSum) {
  if (layout.channelsLast) {
    channelsLastStats(x, layout, mean, varSum);
    return;
  }
  int64_t blocks = (layout.channels + kChains - 1) / kChains;
  at::parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      int64_t c0 = b * kChains;
      if (c0 + kChains <= layout.channels) {
        channelStats<kChains>(x, layout, c0, mean, varSum);
        continue;
      }
      for (int64_t c = c0; c < layout.channels; ++c)
        channelStats<1>(x, layout, c, mean, varSum);
    }
  });
}

/// Normalisation.cpp's invstd and running-statistics update per channel.
void finishStats(const Layout &layout, const float *mean, const float *varSum,
                 float *invstd, float *runningMean, float *runningVar,
                 double momentum, double eps, const Rounding &rounding) {
  int64_t n = layout.count();
  for (int64_t c = 0; c < layout.channels; ++c) {
    double var = double(varSum[c] / float(n)); // float / int64: float
    invstd[c] = (var != 0.0 || eps != 0.0) ? float(1.0 / std::sqrt(var + eps))
                                           : 0.0f;
    double unbiased = double(varSum[c] / float(n - 1));
    if (rounding.floatMomentum) {
      float m = float(momentum);
      runningMean[c] = m * mean[c] + (1 - m) * runningMean[c];
      // (1 - m) * runningVar is a float product; the sum is double.
      runningVar[c] = float(double(m) * unbiased + double((1 - m) * runningVar[c]));
    } else {
      runningMean[c] = float(momentum * double(mean[c]) +
                             (1 - momentum) * double(runningMean[c]));
      runningVar[c] = float(momentum * unbiased +
                            (1 - momentum) * double(runningVar[c]));
    }
  }
}

void affinePlane(const float *x, float *y, int64_t size, float alpha,
                 float beta) {
  for (int64_t i = 0; i < size; ++i)
    y[i] = x[i] * alpha + beta;
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) void
affinePlaneFma(const float *x, float *y, int64_t size, float alpha,
               float beta) {
  for (int64_t i = 0; i < size; ++i)
    y[i] = __builtin_fmaf(x[i], alpha, beta);
}
#else
void affinePlaneFma(const float *x, float *y, int64_t size, float alpha,
                    float beta) {
  for (int64_t i = 0; i < size; ++i)
    y[i] = std::fma(x[i], alpha, beta);
}
#endif

/// ATen's batch_norm_cpu_collect_linear_and_constant_terms from a per-channel
/// invstd: scale = invstd * weight, shift = bias - mean * scale.
ChannelAffine affineTerms(const float *mean, const float *invstd, const float *weight,
                          const float *bias, int64_t channels, const Rounding &rounding) {
  ChannelAffine terms{at::empty({channels}, at::kFloat), at::empty({channels}, at::kFloat),
                      rounding.fmaOutput};
  float *scale = terms.scale.data_ptr<float>(), *shift = terms.shift.data_ptr<float>();
  for (int64_t c = 0; c < channels; ++c) {
    scale[c] = invstd[c] * weight[c];
    shift[c] = rounding.fmaShift ? std::fma(-mean[c], scale[c], bias[c])
                                 : bias[c] - mean[c] * scale[c];
  }
  return terms;
}

/// y = x * scale[c] + shift[c] over [B, C, image] (ATen's
/// batch_norm_cpu_contiguous_impl).
void transform(const float *x, float *y, const Layout &layout, const ChannelAffine &terms) {
  const float *scale = terms.scale.data_ptr<float>(), *shift = terms.shift.data_ptr<float>();
  int64_t planes = layout.batch * layout.channels;
  int64_t grain = std::max<int64_t>(1, (int64_t(1) << 14) / layout.image);
  at::parallel_for(0, planes, grain, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      int64_t c = p % layout.channels;
      const float *in = x + p * layout.image;
      float *out = y + p * layout.image;
      if (terms.fma)
        affinePlaneFma(in, out, layout.image, scale[c], shift[c]);
      else
        affinePlane(in, out, layout.image, scale[c], shift[c]);
    }
  });
}

void affinePixel(const float *x, float *y, int64_t channels, const float *scale,
                 const float *shift) {
  for (int64_t c = 0; c < channels; ++c)
    y[c] = x[c] * scale[c] + shift[c];
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) void affinePixelFma(const float *x, float *y,
                                                         int64_t channels, const float *scale,
                                                         const float *shift) {
  for (int64_t c = 0; c < channels; ++c)
    y[c] = __builtin_fmaf(x[c], scale[c], shift[c]);
}
#else
void affinePixelFma(const float *x, float *y, int64_t channels, const float *scale,
                    const float *shift) {
  for (int64_t c = 0; c < channels; ++c)
    y[c] = std::fma(x[c], scale[c], shift[c]);
}
#endif

/// transform over NHWC pixels: the same expression per element.
void transformChannelsLast(const float *x, float *y, const Layout &layout,
                           const ChannelAffine &terms) {
  const float *scale = terms.scale.data_ptr<float>(), *shift = terms.shift.data_ptr<float>();
  const int64_t channels = layout.channels;
  int64_t grain = std::max<int64_t>(1, (int64_t(1) << 14) / channels);
  at::parallel_for(0, layout.batch * layout.image, grain, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      if (terms.fma)
        affinePixelFma(x + p * channels, y + p * channels, channels, scale, shift);
      else
        affinePixel(x + p * channels, y + p * channels, channels, scale, shift);
    }
  });
}

/// Mean, invstd and the running-statistics update of a training forward.
BatchNormForwardResult statisticsWith(const at::Tensor &x, const at::Tensor &runningMean,
                                      const at::Tensor &runningVar, double momentum,
                                      double eps, const Rounding &rounding,
                                      int64_t repeats = 1) {
  Layout layout{x.size(0), x.size(1), x.numel() / (x.size(0) * x.size(1)), repeats,
                !x.is_contiguous()};
  if (layout.channelsLast && !x.is_contiguous(at::MemoryFormat::ChannelsLast))
    throw Error("BatchNorm statistics: the input is neither dense NCHW nor dense NHWC");
  BatchNormForwardResult result;
  result.mean = at::empty({layout.channels}, x.options());
  result.invstd = at::empty({layout.channels}, x.options());
  at::Tensor varSum = at::empty({layout.channels}, x.options());
  if (layout.count() == 0)
    return result;
  collectStats(x.data_ptr<float>(), layout, result.mean.data_ptr<float>(),
               varSum.data_ptr<float>());
  finishStats(layout, result.mean.data_ptr<float>(), varSum.data_ptr<float>(),
              result.invstd.data_ptr<float>(), runningMean.data_ptr<float>(),
              runningVar.data_ptr<float>(), momentum, eps, rounding);
  return result;
}

BatchNormForwardResult forwardWith(const at::Tensor &x,
                                   const at::Tensor &weight,
                                   const at::Tensor &bias,
                                   const at::Tensor &runningMean,
                                   const at::Tensor &runningVar,
                                   double momentum, double eps,
                                   const Rounding &rounding) {
  BatchNormForwardResult result =
      statisticsWith(x, runningMean, runningVar, momentum, eps, rounding);
  result.output = at::empty_like(x); // NCHW or NHWC, as x
  Layout layout{x.size(0), x.size(1), x.numel() / (x.size(0) * x.size(1)), 1,
                !x.is_contiguous()};
  if (layout.count() == 0)
    return result;
  ChannelAffine terms =
      affineTerms(result.mean.data_ptr<float>(), result.invstd.data_ptr<float>(),
                  weight.data_ptr<float>(), bias.data_ptr<float>(), layout.channels, rounding);
  if (layout.channelsLast)
    transformChannelsLast(x.data_ptr<float>(), result.output.data_ptr<float>(), layout, terms);
  else
    transform(x.data_ptr<float>(), result.output.data_ptr<float>(), layout, terms);
  return result;
}

/// The fixed operands both probes run ATen on.
struct ProbeOperands {
  at::Tensor x = probeTensor({5, 16, 7, 6}, 2.5, 0.3);
  at::Tensor weight = probeTensor({16}, 0.7, 1.1);
  at::Tensor bias = probeTensor({16}, 0.4, -0.2);
  at::Tensor mean = probeTensor({16}, 0.3, 0.1);
  at::Tensor var = probeTensor({16}, 0.5, 1.5);
};

/// The variant that reproduces ATen on a fixed input, if any.
std::optional<Rounding> probeRounding() {
  c10::AutoGradMode noGrad(false);
  ProbeOperands o;
  const at::Tensor &x = o.x, &weight = o.weight, &bias = o.bias, &mean0 = o.mean,
                   &var0 = o.var;
  const double momentum = 0.1, eps = 1e-5;
  at::Tensor meanA = mean0.clone(), varA = var0.clone();
  auto expected = at::native_batch_norm(x, weight, bias, meanA, varA, true,
                                        momentum, eps);
  for (int variant = 0; variant < 8; ++variant) {
    Rounding rounding{(variant & 1) == 0, (variant & 2) == 0,
                      (variant & 4) != 0};
    if (rounding.fmaOutput && !fmaAvailable())
      continue;
    at::Tensor meanB = mean0.clone(), varB = var0.clone();
    BatchNormForwardResult r =
        forwardWith(x, weight, bias, meanB, varB, momentum, eps, rounding);
    if (at::equal(r.output, std::get<0>(expected)) &&
        at::equal(r.mean, std::get<1>(expected)) &&
        at::equal(r.invstd, std::get<2>(expected)) &&
        at::equal(meanB, meanA) && at::equal(varB, varA))
      return rounding;
  }
  return std::nullopt;
}

const std::optional<Rounding> &probedRounding() {
  static const std::optional<Rounding> rounding = probeRounding();
  return rounding;
}

/// How eval-mode BatchNorm rounds 1 / sqrt(var + eps) into its scale: in
/// float, in double rounded to float before the product, or the product
/// itself taken in double.
enum class InferenceInvstd { Float, DoubleRounded, DoubleProduct };

struct InferenceRounding {
  InferenceInvstd invstd;
  Rounding affine;
};

ChannelAffine inferenceTerms(const at::Tensor &weight, const at::Tensor &bias,
                             const at::Tensor &runningMean, const at::Tensor &runningVar,
                             double eps, const InferenceRounding &rounding) {
  int64_t channels = weight.size(0);
  const float *var = runningVar.data_ptr<float>(), *w = weight.data_ptr<float>();
  // The product in double cannot go through affineTerms' float product: it
  // gets invstd 1 and the weight as the rounded product.
  std::vector<float> invstd(static_cast<size_t>(channels)), scaled(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    double exact = 1.0 / std::sqrt(double(var[c]) + eps);
    switch (rounding.invstd) {
    case InferenceInvstd::Float:
      invstd[size_t(c)] = 1.0f / std::sqrt(var[c] + float(eps));
      scaled[size_t(c)] = w[c];
      break;
    case InferenceInvstd::DoubleRounded:
      invstd[size_t(c)] = float(exact);
      scaled[size_t(c)] = w[c];
      break;
    case InferenceInvstd::DoubleProduct:
      invstd[size_t(c)] = 1.0f;
      scaled[size_t(c)] = float(exact * double(w[c]));
      break;
    }
  }
  return affineTerms(runningMean.data_ptr<float>(), invstd.data(), scaled.data(),
                     bias.data_ptr<float>(), channels, rounding.affine);
}

/// The inference variant that reproduces ATen's eval batch_norm, if any.
std::optional<InferenceRounding> probeInferenceRounding() {
  c10::AutoGradMode noGrad(false);
  ProbeOperands o;
  const at::Tensor &x = o.x, &weight = o.weight, &bias = o.bias, &mean = o.mean, &var = o.var;
  const double eps = 1e-5;
  at::Tensor expected = at::batch_norm(x, weight, bias, mean, var, /*training=*/false, 0.1,
                                       eps, /*cudnn_enabled=*/true);
  Layout layout{x.size(0), x.size(1), x.numel() / (x.size(0) * x.size(1))};
  for (InferenceInvstd invstd : {InferenceInvstd::DoubleProduct, InferenceInvstd::DoubleRounded,
                                 InferenceInvstd::Float})
    for (int variant = 0; variant < 4; ++variant) {
      InferenceRounding rounding{invstd, {(variant & 1) == 0, (variant & 2) == 0, false}};
      if (rounding.affine.fmaOutput && !fmaAvailable())
        continue;
      at::Tensor y = at::empty_like(x);
      transform(x.data_ptr<float>(), y.data_ptr<float>(), layout,
                inferenceTerms(weight, bias, mean, var, eps, rounding));
      if (at::equal(y, expected))
        return rounding;
    }
  return std::nullopt;
}

bool isChannelVector(const at::Tensor &t, int64_t channels) {
  return t.defined() && t.scalar_type() == at::kFloat &&
         t.device().is_cpu() && t.dim() == 1 && t.size(0) == channels &&
         t.is_contiguous();
}

} // namespace

bool batchNormKernelAvailable() { return probedRounding().has_value(); }

bool batchNormKernelApplies(const at::Tensor &x, const at::Tensor &weight,
                            const at::Tensor &bias,
                            const at::Tensor &runningMean,
                            const at::Tensor &runningVar) {
  if (x.scalar_type() != at::kFloat || !x.device().is_cpu() || x.dim() < 3 ||
      x.numel() == 0)
    return false;
  int64_t c = x.size(1);
  if (x.numel() / (x.size(0) * c) == 1)
    return false;
  // Planes, or an NHWC image batch (a channels-last conv2d's output): the
  // per-channel sums run over (sample, pixel) in the same order either way.
  // (ATen's own channels-last statistics differ: their sums depend on the
  // thread count.)
  bool planar = x.suggest_memory_format() == at::MemoryFormat::Contiguous && x.is_contiguous();
  if (!planar && !(x.dim() == 4 && x.is_contiguous(at::MemoryFormat::ChannelsLast)))
    return false;
  return isChannelVector(weight, c) && isChannelVector(bias, c) &&
         isChannelVector(runningMean, c) && isChannelVector(runningVar, c);
}

BatchNormForwardResult batchNormTrainingForward(
    const at::Tensor &x, const at::Tensor &weight, const at::Tensor &bias,
    const at::Tensor &runningMean, const at::Tensor &runningVar,
    double momentum, double eps) {
  return forwardWith(x, weight, bias, runningMean, runningVar, momentum, eps,
                     probedRounding().value());
}

BatchNormForwardResult batchNormTrainingStatistics(const at::Tensor &x,
                                                   const at::Tensor &runningMean,
                                                   const at::Tensor &runningVar,
                                                   double momentum, double eps,
                                                   int64_t repeats) {
  return statisticsWith(x, runningMean, runningVar, momentum, eps, probedRounding().value(),
                        repeats);
}

ChannelAffine batchNormTrainingAffine(const at::Tensor &mean, const at::Tensor &invstd,
                                      const at::Tensor &weight, const at::Tensor &bias) {
  return affineTerms(mean.data_ptr<float>(), invstd.data_ptr<float>(),
                     weight.data_ptr<float>(), bias.data_ptr<float>(), mean.size(0),
                     probedRounding().value());
}

std::optional<ChannelAffine> batchNormInferenceAffine(const at::Tensor &weight,
                                                      const at::Tensor &bias,
                                                      const at::Tensor &runningMean,
                                                      const at::Tensor &runningVar,
                                                      double eps) {
  static const std::optional<InferenceRounding> rounding = probeInferenceRounding();
  if (!rounding)
    return std::nullopt;
  return inferenceTerms(weight, bias, runningMean, runningVar, eps, *rounding);
}

} // namespace snn::runtime
