//===- MaxPoolKernels.cpp - Max pooling with a one-byte argmax ------------===//
//
// One plane ([H, W] of one sample and channel) per task. Spike inputs are
// full of ties, so a scalar compare-and-branch loop mispredicts constantly:
// the float 2x2 stride-2 pool (the models' pool) runs four windows at a time
// in SSE2 selects; everything else takes the generic scalar loop.
//
// Vector form of the scan: "a later element replaces the best if greater or
// NaN" is an associative combine (the result is the last NaN if there is
// one, else the first maximum), so combine(combine(a, b), combine(c, d))
// equals ATen's sequential a, b, c, d scan.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Kernels/MaxPoolKernels.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/TensorIO.h"

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace snn::runtime {

namespace {

struct PlaneShape {
  int64_t height, width, outHeight, outWidth;
};

/// ATen's rule: a later element replaces the maximum if greater or NaN.
template <typename T> inline bool replaces(T value, T best) {
  return value > best || value != value;
}

#if defined(__SSE2__)
/// A lane-wise window maximum and its offset code (int32 lanes).
struct Best4 {
  __m128 value;
  __m128i code;
};

/// combine(left, right): right replaces left if greater or NaN.
inline Best4 combine(const Best4 &left, const Best4 &right) {
  __m128 take = _mm_or_ps(_mm_cmpgt_ps(right.value, left.value),
                          _mm_cmpunord_ps(right.value, right.value));
  __m128i takeInt = _mm_castps_si128(take);
  return {_mm_or_ps(_mm_and_ps(take, right.value),
                    _mm_andnot_ps(take, left.value)),
          _mm_or_si128(_mm_and_si128(takeInt, right.code),
                       _mm_andnot_si128(takeInt, left.code))};
}

/// Even and odd lanes of in[0..8): window columns 0 and 1 of 4 windows.
inline void deinterleave(const float *in, __m128 &even, __m128 &odd) {
  __m128 lo = _mm_loadu_ps(in), hi = _mm_loadu_ps(in + 4);
  even = _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
  odd = _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
}

/// Outputs [0, 4 * (outWidth / 4)) of one output row of a 2x2 stride-2
/// pool; returns how many it did (the caller finishes the row).
template <bool SaveArgmax>
int64_t pool2x2RowVector(const float *top, const float *bottom, float *out,
                         uint8_t *argmax, int64_t outWidth) {
  int64_t ow = 0;
  for (; ow + 4 <= outWidth; ow += 4) {
    Best4 a, b, c, d;
    deinterleave(top + 2 * ow, a.value, b.value);
    deinterleave(bottom + 2 * ow, c.value, d.value);
    a.code = _mm_setzero_si128();
    b.code = _mm_set1_epi32(1);
    c.code = _mm_set1_epi32(2);
    d.code = _mm_set1_epi32(3);
    Best4 best = combine(combine(a, b), combine(c, d));
    _mm_storeu_ps(out + ow, best.value);
    if constexpr (SaveArgmax) {
      __m128i bytes = _mm_packus_epi16(_mm_packs_epi32(best.code, best.code),
                                       _mm_setzero_si128());
      int32_t packed = _mm_cvtsi128_si32(bytes);
      std::memcpy(argmax + ow, &packed, sizeof(packed));
    }
  }
  return ow;
}

/// dL/dx of 4 tiled 2x2 windows at a time: two input rows; returns how many
/// windows it did.
int64_t unpool2x2RowVector(const float *gradOut, const uint8_t *argmax,
                           float *top, float *bottom, int64_t outWidth) {
  int64_t ow = 0;
  const __m128i zero = _mm_setzero_si128();
  for (; ow + 4 <= outWidth; ow += 4) {
    // +0 + g, as ATen's scatter-add onto zeros (-0 becomes +0).
    __m128 g = _mm_add_ps(_mm_setzero_ps(), _mm_loadu_ps(gradOut + ow));
    int32_t packed;
    std::memcpy(&packed, argmax + ow, sizeof(packed));
    __m128i code = _mm_unpacklo_epi16(
        _mm_unpacklo_epi8(_mm_cvtsi32_si128(packed), zero), zero);
    auto at = [&](int k) {
      return _mm_and_ps(
          _mm_castsi128_ps(_mm_cmpeq_epi32(code, _mm_set1_epi32(k))), g);
    };
    __m128 v0 = at(0), v1 = at(1), v2 = at(2), v3 = at(3);
    _mm_storeu_ps(top + 2 * ow, _mm_unpacklo_ps(v0, v1));
    _mm_storeu_ps(top + 2 * ow + 4, _mm_unpackhi_ps(v0, v1));
    _mm_storeu_ps(bottom + 2 * ow, _mm_unpacklo_ps(v2, v3));
    _mm_storeu_ps(bottom + 2 * ow + 4, _mm_unpackhi_ps(v2, v3));
  }
  return ow;
}
#endif

/// KH = KW = 0: the window's sizes are read from `window` at run time.
template <typename T, int KH, int KW, bool SaveArgmax>
void poolPlane(const T *in, T *out, uint8_t *argmax, const PlaneShape &shape,
               const MaxPoolWindow &window) {
  const int64_t kh = KH ? KH : window.kernelH, kw = KW ? KW : window.kernelW;
  const int64_t width = shape.width;
  for (int64_t oh = 0; oh < shape.outHeight; ++oh) {
    const T *row = in + oh * window.strideH * width;
    T *outRow = out + oh * shape.outWidth;
    uint8_t *argRow = SaveArgmax ? argmax + oh * shape.outWidth : nullptr;
    int64_t ow = 0;
#if defined(__SSE2__)
    if constexpr (std::is_same_v<T, float> && KH == 2 && KW == 2)
      if (window.strideW == 2)
        ow = pool2x2RowVector<SaveArgmax>(row, row + width, outRow, argRow,
                                          shape.outWidth);
#endif
    for (; ow < shape.outWidth; ++ow) {
      const T *corner = row + ow * window.strideW;
      // The first element starts the scan (ATen starts from -inf with the
      // first index, which picks the same value and index).
      T best = corner[0];
      uint8_t code = 0;
      for (int64_t i = 0; i < kh; ++i)
        for (int64_t j = (i == 0 ? 1 : 0); j < kw; ++j) {
          T value = corner[i * width + j];
          bool take = replaces(value, best);
          best = take ? value : best;
          code = take ? uint8_t(i * kw + j) : code;
        }
      outRow[ow] = best;
      if constexpr (SaveArgmax)
        argRow[ow] = code;
    }
  }
}

/// Windows that tile the plane exactly: every input element is written
/// once, so no zero-fill pass is needed.
template <typename T>
void unpoolTiledPlane(const T *gradOut, const uint8_t *argmax, T *gradIn,
                      const PlaneShape &shape, const MaxPoolWindow &window) {
  const int64_t kh = window.kernelH, kw = window.kernelW;
  for (int64_t oh = 0; oh < shape.outHeight; ++oh) {
    const T *g = gradOut + oh * shape.outWidth;
    const uint8_t *a = argmax + oh * shape.outWidth;
    int64_t done = 0;
#if defined(__SSE2__)
    if constexpr (std::is_same_v<T, float>)
      if (kh == 2 && kw == 2) {
        T *top = gradIn + oh * 2 * shape.width;
        done = unpool2x2RowVector(g, a, top, top + shape.width, shape.outWidth);
      }
#endif
    for (int64_t i = 0; i < kh; ++i) {
      T *row = gradIn + (oh * kh + i) * shape.width;
      for (int64_t ow = done; ow < shape.outWidth; ++ow)
        for (int64_t j = 0; j < kw; ++j)
          // 0 + g as ATen's scatter-add onto zeros computes it (-0 -> +0).
          row[ow * kw + j] = a[ow] == i * kw + j ? T(0) + g[ow] : T(0);
    }
  }
}

/// Any other window: zeros, then ATen's scatter-add in output order.
template <typename T>
void unpoolPlane(const T *gradOut, const uint8_t *argmax, T *gradIn,
                 const PlaneShape &shape, const MaxPoolWindow &window) {
  std::fill(gradIn, gradIn + shape.height * shape.width, T(0));
  for (int64_t oh = 0; oh < shape.outHeight; ++oh)
    for (int64_t ow = 0; ow < shape.outWidth; ++ow) {
      int64_t o = oh * shape.outWidth + ow;
      int64_t i = argmax[o] / window.kernelW, j = argmax[o] % window.kernelW;
      gradIn[(oh * window.strideH + i) * shape.width + ow * window.strideW +
             j] += gradOut[o];
    }
}

/// Planes per parallel task, so that small layers do not pay for threads.
int64_t planeGrain(int64_t planeSize) {
  return std::max<int64_t>(1, (int64_t(1) << 15) / std::max<int64_t>(planeSize, 1));
}

template <typename T, bool SaveArgmax>
void poolAll(const T *in, T *out, uint8_t *argmax, int64_t planes,
             const PlaneShape &shape, const MaxPoolWindow &window) {
  bool twoByTwo = window.kernelH == 2 && window.kernelW == 2;
  int64_t inSize = shape.height * shape.width;
  int64_t outSize = shape.outHeight * shape.outWidth;
  at::parallel_for(0, planes, planeGrain(inSize), [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      uint8_t *a = SaveArgmax ? argmax + p * outSize : nullptr;
      if (twoByTwo)
        poolPlane<T, 2, 2, SaveArgmax>(in + p * inSize, out + p * outSize, a,
                                       shape, window);
      else
        poolPlane<T, 0, 0, SaveArgmax>(in + p * inSize, out + p * outSize, a,
                                       shape, window);
    }
  });
}

template <typename T>
void unpoolAll(const T *gradOut, const uint8_t *argmax, T *gradIn,
               int64_t planes, const PlaneShape &shape,
               const MaxPoolWindow &window) {
  bool tiled = window.strideH == window.kernelH &&
               window.strideW == window.kernelW &&
               shape.height == shape.outHeight * window.kernelH &&
               shape.width == shape.outWidth * window.kernelW;
  int64_t inSize = shape.height * shape.width;
  int64_t outSize = shape.outHeight * shape.outWidth;
  at::parallel_for(0, planes, planeGrain(inSize), [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      if (tiled)
        unpoolTiledPlane(gradOut + p * outSize, argmax + p * outSize,
                         gradIn + p * inSize, shape, window);
      else
        unpoolPlane(gradOut + p * outSize, argmax + p * outSize,
                    gradIn + p * inSize, shape, window);
    }
  });
}

PlaneShape planeShape(at::IntArrayRef sizes, const MaxPoolWindow &window) {
  int64_t h = sizes[2], w = sizes[3];
  if (h < window.kernelH || w < window.kernelW)
    throw Error("max pool: input " + formatShape(sizes) +
                " is smaller than the window");
  return {h, w, (h - window.kernelH) / window.strideH + 1,
          (w - window.kernelW) / window.strideW + 1};
}

void requirePoolTensor(const at::Tensor &t, const char *what) {
  bool floating =
      t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble;
  if (!floating || !t.device().is_cpu() || t.dim() != 4)
    throw Error(std::string("max pool: ") + what +
                " must be a float32 or float64 CPU tensor [B, C, H, W]");
}

} // namespace

bool maxPoolKernelApplies(at::IntArrayRef kernel, at::IntArrayRef stride,
                          at::IntArrayRef padding, at::IntArrayRef dilation,
                          bool ceilMode) {
  auto all = [](at::IntArrayRef values, auto predicate) {
    return std::all_of(values.begin(), values.end(), predicate);
  };
  return kernel.size() == 2 && stride.size() == 2 && !ceilMode &&
         all(padding, [](int64_t v) { return v == 0; }) &&
         all(dilation, [](int64_t v) { return v == 1; }) &&
         all(kernel, [](int64_t v) { return v >= 1; }) &&
         all(stride, [](int64_t v) { return v >= 1; }) &&
         kernel[0] * kernel[1] <= 256;
}

MaxPoolForwardResult maxPoolForward(const at::Tensor &x,
                                    const MaxPoolWindow &window,
                                    bool saveArgmax) {
  requirePoolTensor(x, "input");
  at::Tensor input = x.contiguous();
  PlaneShape shape = planeShape(input.sizes(), window);
  int64_t planes = input.size(0) * input.size(1);
  MaxPoolForwardResult result;
  result.output = at::empty(
      {input.size(0), input.size(1), shape.outHeight, shape.outWidth},
      input.options());
  uint8_t *argmax = nullptr;
  if (saveArgmax) {
    result.argmax = at::empty(result.output.sizes(),
                              input.options().dtype(at::kByte));
    argmax = result.argmax.data_ptr<uint8_t>();
  }
  auto run = [&](auto *in, auto *out) {
    using T = std::remove_pointer_t<decltype(out)>;
    if (saveArgmax)
      poolAll<T, true>(in, out, argmax, planes, shape, window);
    else
      poolAll<T, false>(in, out, nullptr, planes, shape, window);
  };
  if (input.scalar_type() == at::kDouble)
    run(input.data_ptr<double>(), result.output.data_ptr<double>());
  else
    run(input.data_ptr<float>(), result.output.data_ptr<float>());
  return result;
}

at::Tensor maxPoolBackward(const at::Tensor &gradOutput,
                           const at::Tensor &argmax, at::IntArrayRef inputSizes,
                           const MaxPoolWindow &window) {
  requirePoolTensor(gradOutput, "gradient");
  PlaneShape shape = planeShape(inputSizes, window);
  if (gradOutput.sizes() != argmax.sizes() || gradOutput.size(2) != shape.outHeight ||
      gradOutput.size(3) != shape.outWidth)
    throw Error("max pool backward: gradient " +
                formatShape(gradOutput.sizes()) + " does not match the input " +
                formatShape(inputSizes));
  // Gradients can arrive expanded (mean over T) or transposed.
  at::Tensor grad = gradOutput.contiguous();
  at::Tensor gradIn = at::empty(inputSizes, grad.options());
  int64_t planes = inputSizes[0] * inputSizes[1];
  const uint8_t *codes = argmax.data_ptr<uint8_t>();
  if (grad.scalar_type() == at::kDouble)
    unpoolAll(grad.data_ptr<double>(), codes, gradIn.data_ptr<double>(),
              planes, shape, window);
  else
    unpoolAll(grad.data_ptr<float>(), codes, gradIn.data_ptr<float>(), planes,
              shape, window);
  return gradIn;
}

} // namespace snn::runtime
