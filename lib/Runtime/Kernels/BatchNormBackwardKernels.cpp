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
  bool pairwise = true;   // lanes folded pairwise (vector code), else in order (generic)
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
/// target has one, lane-wise operations otherwise).
typedef float Lanes8 __attribute__((vector_size(32)));

inline Lanes8 load8(const float *p) {
  Lanes8 v;
  __builtin_memcpy(&v, p, sizeof(v));
  return v;
}

template <bool Fma> inline Lanes8 mulAdd8(Lanes8 a, Lanes8 b, Lanes8 c) {
  if constexpr (Fma) {
    Lanes8 r;
    for (int l = 0; l < 8; ++l)
      r[l] = __builtin_fmaf(a[l], b[l], c[l]);
    return r;
  } else {
    return c + a * b;
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
    s[v] = load8(dy + 8 * v);
    d[v] = (load8(x + 8 * v) - m) * load8(dy + 8 * v);
  }
  const int64_t body = n - n % L;
  int64_t i = L;
  for (; i < body; i += L)
    for (int v = 0; v < V; ++v) {
      Lanes8 g = load8(dy + i + 8 * v);
      s[v] = s[v] + g;
      d[v] = mulAdd8<FmaDot>(load8(x + i + 8 * v) - m, g, d[v]);
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

using PlaneSumsFn = void (*)(const float *, const float *, float, int64_t, float &, float &);
using InputGradFn = void (*)(const float *, const float *, float *, int64_t, float, float, float,
                             float, float);

bool fmaUsable() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

template <int L, bool FmaDot, bool Pairwise> PlaneSumsFn planeSumsOf() {
  return fmaUsable() ? planeSumsFma<L, FmaDot, Pairwise> : planeSumsPortable<L, FmaDot, Pairwise>;
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
  const bool fast = fmaUsable();
  return r.fmaInput ? (fast ? inputGradFma<true> : inputGradPortable<true>)
                    : (fast ? inputGradFma<false> : inputGradPortable<false>);
}

/// x as S steps of P planes of `image` elements; a step's planes are dense,
/// the steps `stepStride` apart (0: one step repeated).
struct Fold {
  int64_t steps, planes, channels, image, stepStride;
  int64_t count() const { return steps * planes / channels * image; } // per channel
};

Fold foldOf(const at::Tensor &x) {
  const int64_t channels = x.dim() == 5 ? x.size(2) : x.size(1);
  const int64_t steps = x.dim() == 5 ? x.size(0) : 1;
  const int64_t planes = (x.dim() == 5 ? x.size(1) : x.size(0)) * channels;
  const int64_t image = x.size(-1) * x.size(-2);
  return {steps, planes, channels, image, x.dim() == 5 ? x.stride(0) : 0};
}

const float *planeOf(const float *x, const Fold &f, int64_t plane) {
  return x + (plane / f.planes) * f.stepStride + (plane % f.planes) * f.image;
}

int64_t planesPerTask(const Fold &f) {
  return std::max<int64_t>(1, (int64_t(1) << 14) / f.image);
}

BatchNormBackwardResult backwardWith(const at::Tensor &gradOutput, const at::Tensor &x,
                                     const at::Tensor &weight, const at::Tensor &mean,
                                     const at::Tensor &invstd, std::array<bool, 3> mask,
                                     const BatchNormPlaneTotals *given, bool inPlace,
                                     const Reduction &reduction) {
  const Fold f = foldOf(x);
  const int64_t total = f.steps * f.planes;
  const float *dy = gradOutput.data_ptr<float>(), *xs = x.data_ptr<float>();
  const float *meanC = mean.data_ptr<float>(), *invstdC = invstd.data_ptr<float>();
  std::vector<float> sums, dots;
  BatchNormPlaneTotals planes{};
  if (given) {
    planes = *given;
  } else {
    sums.resize(size_t(total));
    dots.resize(size_t(total));
    PlaneSumsFn reduce = planeSumsFor(reduction);
    at::parallel_for(0, total, planesPerTask(f), [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p)
        reduce(dy + p * f.image, planeOf(xs, f, p), meanC[p % f.channels], f.image,
               sums[size_t(p)], dots[size_t(p)]);
    });
    planes = {sums.data(), dots.data()};
  }
  BatchNormBackwardResult result;
  const int64_t C = f.channels, count = f.count();
  std::vector<float> k(static_cast<size_t>(C)), meanDy(static_cast<size_t>(C));
  if (mask[1])
    result.gradWeight = at::empty({C}, x.options());
  if (mask[2])
    result.gradBias = at::empty({C}, x.options());
  for (int64_t c = 0; c < C; ++c) { // ATen's per-channel arithmetic, in its types
    double sum = 0.0, dot = 0.0;
    for (int64_t p = c; p < total; p += C) {
      sum += double(planes.sum[p]);
      dot += double(planes.dot[p]);
    }
    k[size_t(c)] = float(dot) * invstdC[c] * invstdC[c] / float(count);
    meanDy[size_t(c)] = float(sum / double(count));
    if (mask[1])
      result.gradWeight.data_ptr<float>()[c] = float(dot * double(invstdC[c]));
    if (mask[2])
      result.gradBias.data_ptr<float>()[c] = float(sum);
  }
  if (!mask[0])
    return result;
  result.gradInput = inPlace ? gradOutput : at::empty_like(gradOutput);
  float *dx = result.gradInput.data_ptr<float>();
  const float *w = weight.defined() ? weight.data_ptr<float>() : nullptr;
  InputGradFn apply = inputGradFor(reduction);
  at::parallel_for(0, total, planesPerTask(f), [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t c = p % C;
      apply(dy + p * f.image, planeOf(xs, f, p), dx + p * f.image, f.image, meanC[c],
            k[size_t(c)], meanDy[size_t(c)], invstdC[c], w ? w[c] : 1.0f);
    }
  });
  return result;
}

/// A fixed input with distinct values and no RNG (the probe must not move
/// the default generator, which Dropout draws from).
at::Tensor probeTensor(at::IntArrayRef shape, double scale, double offset) {
  at::Tensor t = at::empty(shape, at::kFloat);
  float *data = t.data_ptr<float>();
  for (int64_t i = 0; i < t.numel(); ++i)
    data[i] = float(std::sin(0.377 * double(i) + offset) * scale + offset);
  return t;
}

/// The variant that reproduces ATen on a fixed input, if any. 63 elements
/// per plane: a tail for either lane count.
std::optional<Reduction> probeReduction() {
  c10::AutoGradMode noGrad(false);
  at::Tensor x = probeTensor({5, 3, 7, 9}, 2.5, 0.3), dy = probeTensor({5, 3, 7, 9}, 1.5, -0.1);
  at::Tensor weight = probeTensor({3}, 0.7, 1.1), mean = probeTensor({3}, 0.3, 0.2);
  at::Tensor invstd = probeTensor({3}, 0.2, 0.9);
  auto expected = at::native_batch_norm_backward(dy, x, weight, at::Tensor(), at::Tensor(), mean,
                                                 invstd, true, 1e-5, {true, true, true});
  for (int lanes : {8, 16})
    for (int variant = 0; variant < 8; ++variant) {
      Reduction r{lanes, (variant & 1) == 0, (variant & 2) == 0, (variant & 4) == 0};
      if ((r.fmaDot || r.fmaInput) && !fmaUsable())
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
  if (x.dim() == 4)
    return x.is_contiguous();
  return x.is_contiguous() || (x.stride(0) == 0 && x.select(0, 0).is_contiguous());
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
  if (!batchNormBackwardKernelApplies(x) || gradOutput.sizes() != x.sizes() ||
      !gradOutput.is_contiguous() || gradOutput.scalar_type() != at::kFloat)
    throw Error("BatchNorm backward kernel: unsupported operands");
  return backwardWith(gradOutput, x, weight, mean, invstd, mask, planes, inPlace,
                      probedReduction().value());
}

} // namespace snn::runtime
