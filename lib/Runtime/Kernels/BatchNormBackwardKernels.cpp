//===- BatchNormBackwardKernels.cpp - Training BatchNorm backward ---------===//
//
// ATen's batch_norm_cpu_backward_contiguous_impl, reproduced: per channel,
// each (sample, channel) plane's sum(dy) and sum((x - mean) * dy) reduced in
// float with its vector lanes (the plane's tail added into the first lanes,
// the lanes folded pairwise), those added in double in sample order; then
//   dx = (dy - sum / N - (x - mean) * (dot * invstd^2 / N)) * invstd * w,
// elementwise. Built with -ffp-contract=off: the only fused multiply-adds
// are the explicit ones of the variant the probe selected.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Kernels/BatchNormBackwardKernels.h"
#include "RoundingProbe.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/native_batch_norm_backward.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#if defined(__x86_64__)
#define SNN_BN_FMA_TARGET __attribute__((target("avx2,fma")))
#else
#define SNN_BN_FMA_TARGET
#endif

namespace snn::runtime {

namespace {

/// The roundings ATen's build may have chosen, fixed by the probe.
struct Reduction {
  int lanes = 8;         // its CPU capability's float vector width
  bool fmaDot = false;   // acc + (x - mean) * dy fused
  bool fmaInput = false; // (dy - mean_dy) - (x - mean) * k fused
  bool pairwise = true;  // lanes folded pairwise (vector code), else in order (generic)
};

/// Lanes folded as ATen's reductions do: halves added pairwise (its AVX2 and
/// AVX-512 code), or lane after lane (its generic code).
template <int L, bool Pairwise> inline float foldLanes(float *a) {
  if constexpr (Pairwise) {
    for (int half = L / 2; half >= 1; half /= 2)
      for (int l = 0; l < half; ++l)
        a[l] = a[l] + a[l + half];
    return a[0];
  }
  float total = a[0];
  for (int l = 1; l < L; ++l)
    total = total + a[l];
  return total;
}

/// Eight float lanes (GCC vector extension: one AVX register where the
/// target has one, lane-wise operations otherwise). Passed by reference, so
/// no call depends on the vector ABI of the target it is built for.
typedef float Lanes8 __attribute__((vector_size(32)));

inline void load8(Lanes8 &v, const float *p) { __builtin_memcpy(&v, p, sizeof(v)); }

/// c += a * b, rounded once (Fma) or twice.
template <bool Fma> inline void mulAdd8(Lanes8 &c, const Lanes8 &a, const Lanes8 &b) {
  if constexpr (Fma) {
    for (int l = 0; l < 8; ++l)
      c[l] = __builtin_fmaf(a[l], b[l], c[l]);
  } else {
    c = c + a * b;
  }
}

/// ATen's reduce_all (sum of dy) and map2_reduce_all (sum of (x - mean) * dy)
/// over one plane with L lanes, L / 8 vectors of eight.
template <int L, bool FmaDot, bool Pairwise>
inline __attribute__((always_inline)) void
planeSumsBody(const float *__restrict dy, const float *__restrict x, float mean, int64_t n,
              float &sumOut, float &dotOut) {
  constexpr int V = L / 8;
  const Lanes8 m = {mean, mean, mean, mean, mean, mean, mean, mean};
  Lanes8 s[V], d[V];
  for (int v = 0; v < V; ++v) {
    Lanes8 xv;
    load8(s[v], dy + 8 * v);
    load8(xv, x + 8 * v);
    d[v] = (xv - m) * s[v];
  }
  const int64_t body = n - n % L;
  int64_t i = L;
  for (; i < body; i += L)
    for (int v = 0; v < V; ++v) {
      Lanes8 g, xv;
      load8(g, dy + i + 8 * v);
      load8(xv, x + i + 8 * v);
      s[v] = s[v] + g;
      mulAdd8<FmaDot>(d[v], xv - m, g);
    }
  float sl[L], dl[L];
  __builtin_memcpy(sl, s, sizeof(sl));
  __builtin_memcpy(dl, d, sizeof(dl));
  for (int64_t l = 0; i + l < n; ++l) { // the tail, into the first lanes
    sl[l] = sl[l] + dy[i + l];
    float xm = x[i + l] - mean;
    dl[l] = FmaDot ? __builtin_fmaf(xm, dy[i + l], dl[l]) : dl[l] + xm * dy[i + l];
  }
  sumOut = foldLanes<L, Pairwise>(sl);
  dotOut = foldLanes<L, Pairwise>(dl);
}

template <int L, bool FmaDot, bool Pairwise>
void planeSumsPortable(const float *dy, const float *x, float mean, int64_t n, float &sum,
                       float &dot) {
  planeSumsBody<L, FmaDot, Pairwise>(dy, x, mean, n, sum, dot);
}

template <int L, bool FmaDot, bool Pairwise>
SNN_BN_FMA_TARGET void planeSumsFma(const float *dy, const float *x, float mean, int64_t n,
                                    float &sum, float &dot) {
  planeSumsBody<L, FmaDot, Pairwise>(dy, x, mean, n, sum, dot);
}

/// dx over one plane. No restrict: dx may be dy (in place, element by element).
template <bool FmaInput>
inline __attribute__((always_inline)) void
inputGradBody(const float *dy, const float *x, float *dx, int64_t n, float mean, float k,
              float meanDy, float invstd, float w) {
  for (int64_t i = 0; i < n; ++i) {
    float xm = x[i] - mean;
    float centred = FmaInput ? __builtin_fmaf(-xm, k, dy[i] - meanDy) : (dy[i] - meanDy) - xm * k;
    dx[i] = centred * invstd * w;
  }
}

template <bool FmaInput>
void inputGradPortable(const float *dy, const float *x, float *dx, int64_t n, float mean,
                       float k, float meanDy, float invstd, float w) {
  inputGradBody<FmaInput>(dy, x, dx, n, mean, k, meanDy, invstd, w);
}

template <bool FmaInput>
SNN_BN_FMA_TARGET void inputGradFma(const float *dy, const float *x, float *dx, int64_t n,
                                    float mean, float k, float meanDy, float invstd, float w) {
  inputGradBody<FmaInput>(dy, x, dx, n, mean, k, meanDy, invstd, w);
}

/// One pixel's C channels into one lane of each channel's accumulators: the
/// lane's first element (ATen loads it) or a later one (added).
template <bool FmaDot, bool First>
inline __attribute__((always_inline)) void
pixelIntoLane(const float *__restrict dy, const float *__restrict x,
              const float *__restrict mean, float *__restrict s, float *__restrict d,
              int64_t channels) {
  for (int64_t c = 0; c < channels; ++c) {
    float xm = x[c] - mean[c];
    if constexpr (First) {
      s[c] = dy[c];
      d[c] = xm * dy[c];
    } else {
      s[c] = s[c] + dy[c];
      d[c] = FmaDot ? __builtin_fmaf(xm, dy[c], d[c]) : d[c] + xm * dy[c];
    }
  }
}

/// Pixels [first, first + count) of an NHWC image into lanes [lanes][C]: the
/// pixel a plane holds at i goes where planeSumsBody puts element i.
template <bool FmaDot>
inline __attribute__((always_inline)) void
pixelSumsBody(const float *dy, const float *x, const float *mean, int64_t first, int64_t count,
              int64_t channels, int64_t image, int lanes, float *s, float *d) {
  const int64_t body = image - image % lanes;
  for (int64_t k = 0; k < count; ++k) {
    const int64_t i = first + k, lane = i < body ? i % lanes : i - body;
    float *sl = s + lane * channels, *dl = d + lane * channels;
    if (i < lanes)
      pixelIntoLane<FmaDot, true>(dy + k * channels, x + k * channels, mean, sl, dl, channels);
    else
      pixelIntoLane<FmaDot, false>(dy + k * channels, x + k * channels, mean, sl, dl, channels);
  }
}

template <bool FmaDot>
void pixelSumsPortable(const float *dy, const float *x, const float *mean, int64_t first,
                       int64_t count, int64_t channels, int64_t image, int lanes, float *s,
                       float *d) {
  pixelSumsBody<FmaDot>(dy, x, mean, first, count, channels, image, lanes, s, d);
}

template <bool FmaDot>
SNN_BN_FMA_TARGET void pixelSumsFma(const float *dy, const float *x, const float *mean,
                                    int64_t first, int64_t count, int64_t channels,
                                    int64_t image, int lanes, float *s, float *d) {
  pixelSumsBody<FmaDot>(dy, x, mean, first, count, channels, image, lanes, s, d);
}

/// dx over NHWC pixels, the per-channel terms from arrays. dx may be dy.
template <bool FmaInput>
inline __attribute__((always_inline)) void
pixelInputGradBody(const float *dy, const float *x, float *dx, int64_t pixels, int64_t channels,
                   const float *mean, const float *k, const float *meanDy, const float *invstd,
                   const float *w) {
  for (int64_t p = 0; p < pixels; ++p)
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t o = p * channels + c;
      float xm = x[o] - mean[c];
      float centred = FmaInput ? __builtin_fmaf(-xm, k[c], dy[o] - meanDy[c])
                               : (dy[o] - meanDy[c]) - xm * k[c];
      dx[o] = centred * invstd[c] * w[c];
    }
}

template <bool FmaInput>
void pixelInputGradPortable(const float *dy, const float *x, float *dx, int64_t pixels,
                            int64_t channels, const float *mean, const float *k,
                            const float *meanDy, const float *invstd, const float *w) {
  pixelInputGradBody<FmaInput>(dy, x, dx, pixels, channels, mean, k, meanDy, invstd, w);
}

template <bool FmaInput>
SNN_BN_FMA_TARGET void pixelInputGradFma(const float *dy, const float *x, float *dx,
                                         int64_t pixels, int64_t channels, const float *mean,
                                         const float *k, const float *meanDy,
                                         const float *invstd, const float *w) {
  pixelInputGradBody<FmaInput>(dy, x, dx, pixels, channels, mean, k, meanDy, invstd, w);
}

using PixelSumsFn = void (*)(const float *, const float *, const float *, int64_t, int64_t,
                             int64_t, int64_t, int, float *, float *);
using PixelInputGradFn = void (*)(const float *, const float *, float *, int64_t, int64_t,
                                  const float *, const float *, const float *, const float *,
                                  const float *);

using PlaneSumsFn = void (*)(const float *, const float *, float, int64_t, float &, float &);
using InputGradFn = void (*)(const float *, const float *, float *, int64_t, float, float, float,
                             float, float);

template <int L, bool FmaDot, bool Pairwise> PlaneSumsFn planeSumsOf() {
  return fmaAvailable() ? planeSumsFma<L, FmaDot, Pairwise>
                        : planeSumsPortable<L, FmaDot, Pairwise>;
}

template <int L, bool FmaDot> PlaneSumsFn planeSumsOf(bool pairwise) {
  return pairwise ? planeSumsOf<L, FmaDot, true>() : planeSumsOf<L, FmaDot, false>();
}

template <int L> PlaneSumsFn planeSumsOf(bool fmaDot, bool pairwise) {
  return fmaDot ? planeSumsOf<L, true>(pairwise) : planeSumsOf<L, false>(pairwise);
}

PlaneSumsFn planeSumsFor(const Reduction &r) {
  return r.lanes == 16 ? planeSumsOf<16>(r.fmaDot, r.pairwise)
                       : planeSumsOf<8>(r.fmaDot, r.pairwise);
}

InputGradFn inputGradFor(const Reduction &r) {
  const bool fast = fmaAvailable();
  return r.fmaInput ? (fast ? inputGradFma<true> : inputGradPortable<true>)
                    : (fast ? inputGradFma<false> : inputGradPortable<false>);
}

PixelSumsFn pixelSumsFor(bool fmaDot) {
  const bool fast = fmaAvailable();
  return fmaDot ? (fast ? pixelSumsFma<true> : pixelSumsPortable<true>)
                : (fast ? pixelSumsFma<false> : pixelSumsPortable<false>);
}

PixelInputGradFn pixelInputGradFor(const Reduction &r) {
  const bool fast = fmaAvailable();
  return r.fmaInput ? (fast ? pixelInputGradFma<true> : pixelInputGradPortable<true>)
                    : (fast ? pixelInputGradFma<false> : pixelInputGradPortable<false>);
}

template <int L> float foldLanesOf(float *a, bool pairwise) {
  return pairwise ? foldLanes<L, true>(a) : foldLanes<L, false>(a);
}

/// x as S steps of P = N * C planes of `image` elements: a step holds N
/// images, as C planes each (NCHW) or as `image` pixels of C channels
/// (NHWC); the steps `stepStride` apart (0: one step repeated).
struct Fold {
  int64_t steps, planes, channels, image, stepStride;
  bool channelsLast;
  int64_t images() const { return steps * planes / channels; }
  int64_t count() const { return images() * image; } // per channel
  /// Image b (of the steps * N) of x.
  const float *imageOf(const float *x, int64_t b) const {
    const int64_t samples = planes / channels;
    return x + (b / samples) * stepStride + (b % samples) * image * channels;
  }
  /// Plane p (of the steps * N * C) of NCHW x.
  const float *planeOf(const float *x, int64_t p) const {
    return x + (p / planes) * stepStride + (p % planes) * image;
  }
};

/// Whether x's steps (one step, if it repeats) are dense in `format`.
bool stepsAre(const at::Tensor &x, at::MemoryFormat format) {
  if (x.dim() == 4)
    return x.is_contiguous(format);
  if (x.stride(0) == 0)
    return x.select(0, 0).is_contiguous(format);
  return x.flatten(0, 1).is_contiguous(format);
}

Fold foldOf(const at::Tensor &x) {
  const int64_t channels = x.dim() == 5 ? x.size(2) : x.size(1);
  const int64_t steps = x.dim() == 5 ? x.size(0) : 1;
  const int64_t planes = (x.dim() == 5 ? x.size(1) : x.size(0)) * channels;
  const int64_t image = x.size(-1) * x.size(-2);
  return {steps, planes, channels, image, x.dim() == 5 ? x.stride(0) : 0,
          !stepsAre(x, at::MemoryFormat::Contiguous)};
}

int64_t tasksOf(int64_t elementsPerItem) {
  return std::max<int64_t>(1, (int64_t(1) << 14) / std::max<int64_t>(1, elementsPerItem));
}

/// Every plane's sums, ATen's way, into sum[b * C + c] and dot[b * C + c].
void planeSums(const float *dy, const float *x, const float *mean, const Fold &f,
               const Reduction &reduction, float *sum, float *dot) {
  if (f.channelsLast) {
    at::parallel_for(0, f.images(), tasksOf(f.image * f.channels), [&](int64_t b0, int64_t b1) {
      BatchNormPixelSums acc(f.channels, f.image);
      for (int64_t b = b0; b < b1; ++b) {
        acc.add(dy + b * f.image * f.channels, f.imageOf(x, b), mean, 0, f.image);
        acc.finish(sum + b * f.channels, dot + b * f.channels);
      }
    });
    return;
  }
  PlaneSumsFn reduce = planeSumsFor(reduction);
  at::parallel_for(0, f.steps * f.planes, tasksOf(f.image), [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p)
      reduce(dy + p * f.image, f.planeOf(x, p), mean[p % f.channels], f.image, sum[p], dot[p]);
  });
}

/// ATen's per-channel terms of dx.
struct ChannelTerms {
  std::vector<float> k, meanDy;
};

/// The terms, and the weight and bias gradients where `result` holds them.
ChannelTerms channelTerms(const BatchNormPlaneTotals &planes, const Fold &f,
                          const float *invstd, BatchNormBackwardResult &result) {
  const int64_t C = f.channels, total = f.steps * f.planes, count = f.count();
  ChannelTerms terms{std::vector<float>(size_t(C)), std::vector<float>(size_t(C))};
  for (int64_t c = 0; c < C; ++c) { // in ATen's types
    double sum = 0.0, dot = 0.0;
    for (int64_t p = c; p < total; p += C) {
      sum += double(planes.sum[p]);
      dot += double(planes.dot[p]);
    }
    terms.k[size_t(c)] = float(dot) * invstd[c] * invstd[c] / float(count);
    terms.meanDy[size_t(c)] = float(sum / double(count));
    if (result.gradWeight.defined())
      result.gradWeight.data_ptr<float>()[c] = float(dot * double(invstd[c]));
    if (result.gradBias.defined())
      result.gradBias.data_ptr<float>()[c] = float(sum);
  }
  return terms;
}

void inputGrad(const float *dy, const float *x, float *dx, const Fold &f, const float *mean,
               const ChannelTerms &terms, const float *invstd, const float *w,
               const Reduction &reduction) {
  if (f.channelsLast) {
    PixelInputGradFn apply = pixelInputGradFor(reduction);
    const int64_t size = f.image * f.channels;
    at::parallel_for(0, f.images(), tasksOf(size), [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b)
        apply(dy + b * size, f.imageOf(x, b), dx + b * size, f.image, f.channels, mean,
              terms.k.data(), terms.meanDy.data(), invstd, w);
    });
    return;
  }
  InputGradFn apply = inputGradFor(reduction);
  at::parallel_for(0, f.steps * f.planes, tasksOf(f.image), [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t c = p % f.channels;
      apply(dy + p * f.image, f.planeOf(x, p), dx + p * f.image, f.image, mean[c],
            terms.k[size_t(c)], terms.meanDy[size_t(c)], invstd[c], w[c]);
    }
  });
}

BatchNormBackwardResult backwardWith(const at::Tensor &gradOutput, const at::Tensor &x,
                                     const at::Tensor &weight, const at::Tensor &mean,
                                     const at::Tensor &invstd, std::array<bool, 3> mask,
                                     const BatchNormPlaneTotals *given, bool inPlace,
                                     const Reduction &reduction) {
  const Fold f = foldOf(x);
  const float *dy = gradOutput.data_ptr<float>(), *xs = x.data_ptr<float>();
  const float *meanC = mean.data_ptr<float>(), *invstdC = invstd.data_ptr<float>();
  std::vector<float> sums, dots;
  BatchNormPlaneTotals planes{};
  if (given) {
    planes = *given;
  } else {
    sums.resize(size_t(f.steps * f.planes));
    dots.resize(sums.size());
    planeSums(dy, xs, meanC, f, reduction, sums.data(), dots.data());
    planes = {sums.data(), dots.data()};
  }
  BatchNormBackwardResult result;
  if (mask[1])
    result.gradWeight = at::empty({f.channels}, x.options());
  if (mask[2])
    result.gradBias = at::empty({f.channels}, x.options());
  ChannelTerms terms = channelTerms(planes, f, invstdC, result);
  if (!mask[0])
    return result;
  result.gradInput = inPlace ? gradOutput : at::empty_like(gradOutput);
  std::vector<float> ones;
  const float *w = weight.defined() ? weight.data_ptr<float>() : nullptr;
  if (!w) {
    ones.assign(size_t(f.channels), 1.0f);
    w = ones.data();
  }
  inputGrad(dy, xs, result.gradInput.data_ptr<float>(), f, meanC, terms, invstdC, w, reduction);
  return result;
}

/// The variant that reproduces ATen on a fixed input, if any. 63 elements
/// per plane: a tail for either lane count.
std::optional<Reduction> probeReduction() {
  c10::AutoGradMode noGrad(false);
  const double f = 0.377;
  at::Tensor x = probeTensor({5, 3, 7, 9}, 2.5, 0.3, f);
  at::Tensor dy = probeTensor({5, 3, 7, 9}, 1.5, -0.1, f);
  at::Tensor weight = probeTensor({3}, 0.7, 1.1, f), mean = probeTensor({3}, 0.3, 0.2, f);
  at::Tensor invstd = probeTensor({3}, 0.2, 0.9, f);
  auto expected = at::native_batch_norm_backward(dy, x, weight, at::Tensor(), at::Tensor(), mean,
                                                 invstd, true, 1e-5, {true, true, true});
  for (int lanes : {8, 16})
    for (int variant = 0; variant < 8; ++variant) {
      Reduction r{lanes, (variant & 1) == 0, (variant & 2) == 0, (variant & 4) == 0};
      if ((r.fmaDot || r.fmaInput) && !fmaAvailable())
        continue;
      BatchNormBackwardResult got =
          backwardWith(dy, x, weight, mean, invstd, {true, true, true}, nullptr, false, r);
      if (at::equal(got.gradInput, std::get<0>(expected)) &&
          at::equal(got.gradWeight, std::get<1>(expected)) &&
          at::equal(got.gradBias, std::get<2>(expected)))
        return r;
    }
  return std::nullopt;
}

const std::optional<Reduction> &probedReduction() {
  static const std::optional<Reduction> reduction = probeReduction();
  return reduction;
}

} // namespace

bool batchNormBackwardKernelAvailable() { return probedReduction().has_value(); }

bool batchNormBackwardKernelApplies(const at::Tensor &x) {
  if (!x.defined() || x.scalar_type() != at::kFloat || !x.device().is_cpu() ||
      (x.dim() != 4 && x.dim() != 5) || x.size(-1) * x.size(-2) < 16)
    return false;
  return stepsAre(x, at::MemoryFormat::Contiguous) || stepsAre(x, at::MemoryFormat::ChannelsLast);
}

BatchNormPixelSums::BatchNormPixelSums(int64_t channels, int64_t image)
    : channels(channels), image(image) {
  const Reduction &r = probedReduction().value();
  lanes = r.lanes;
  fmaDot = r.fmaDot;
  pairwise = r.pairwise;
  sums.assign(size_t(lanes * channels), 0.0f);
  dots.assign(sums.size(), 0.0f);
}

void BatchNormPixelSums::add(const float *dy, const float *x, const float *mean, int64_t first,
                             int64_t count) {
  static const PixelSumsFn fused = pixelSumsFor(true), unfused = pixelSumsFor(false);
  (fmaDot ? fused : unfused)(dy, x, mean, first, count, channels, image, lanes, sums.data(),
                             dots.data());
}

void BatchNormPixelSums::finish(float *sum, float *dot) {
  float s[16], d[16];
  for (int64_t c = 0; c < channels; ++c) {
    for (int l = 0; l < lanes; ++l) {
      s[l] = sums[size_t(l * channels + c)];
      d[l] = dots[size_t(l * channels + c)];
    }
    sum[c] = lanes == 16 ? foldLanesOf<16>(s, pairwise) : foldLanesOf<8>(s, pairwise);
    dot[c] = lanes == 16 ? foldLanesOf<16>(d, pairwise) : foldLanesOf<8>(d, pairwise);
  }
}

void batchNormPlaneSums(const float *dy, const float *x, float mean, int64_t image, float &sum,
                        float &dot) {
  static const PlaneSumsFn reduce = planeSumsFor(probedReduction().value());
  reduce(dy, x, mean, image, sum, dot);
}

BatchNormBackwardResult batchNormTrainingBackward(const at::Tensor &gradOutput,
                                                  const at::Tensor &x, const at::Tensor &weight,
                                                  const at::Tensor &mean,
                                                  const at::Tensor &invstd,
                                                  std::array<bool, 3> mask,
                                                  const BatchNormPlaneTotals *planes,
                                                  bool inPlace) {
  const at::MemoryFormat layout = foldOf(x).channelsLast ? at::MemoryFormat::ChannelsLast
                                                         : at::MemoryFormat::Contiguous;
  if (!batchNormBackwardKernelApplies(x) || gradOutput.sizes() != x.sizes() ||
      gradOutput.scalar_type() != at::kFloat || (x.dim() == 5 && gradOutput.stride(0) == 0) ||
      !stepsAre(gradOutput, layout))
    throw Error("BatchNorm backward kernel: unsupported operands");
  return backwardWith(gradOutput, x, weight, mean, invstd, mask, planes, inPlace,
                      probedReduction().value());
}

} // namespace snn::runtime
