//===- SpikingBlockKernelsImpl.h - Block loops, built once per ISA -*- C++ -*-===//
//
// The spiking block's forward and backward as templates over the neuron's
// functors (NeuronEquations.h). Included by SpikingBlockKernelsBaseline.cpp
// and SpikingBlockKernelsAvx2.cpp, each defining SNN_BLOCK_ISA (its
// namespace) and SNN_BLOCK_TARGET (the hot loops' target attribute); both are
// built with -ffp-contract=off, so the only fused multiply-adds are the
// BatchNorm affine's explicit ones where ATen rounds that way.
//
// One parallel task per run of (sample, channel) planes; per plane the steps
// run in order with the plane's state (membrane, or dL/dV going backwards)
// in a buffer of one plane.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_BLOCK_ISA
#error "define SNN_BLOCK_ISA before including SpikingBlockKernelsImpl.h"
#endif
#ifndef SNN_BLOCK_TARGET
#define SNN_BLOCK_TARGET
#endif
#ifndef SNN_BLOCK_FMA_TARGET
#define SNN_BLOCK_FMA_TARGET SNN_BLOCK_TARGET
#endif

#include "NeuronEquations.h"
#include "SpikingBlockKernelsIsa.h"
#include "snn/Runtime/Kernels/BatchNormBackwardKernels.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <type_traits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <utility>
#include <vector>

namespace snn::runtime {

namespace {

/// Element-steps per parallel task, so small layers do not pay for threads.
constexpr int64_t kMinBlockWork = 1 << 15;

int64_t planesPerTask(const BlockDims &dims) {
  return std::max<int64_t>(1, kMinBlockWork / std::max<int64_t>(1, dims.steps * dims.image()));
}

template <bool Fma> inline float affineOf(float x, float scale, float shift) {
  if constexpr (Fma)
    return __builtin_fmaf(x, scale, shift);
  else
    return x * scale + shift;
}

/// One element of one step: BatchNorm affine, charge, fire, reset. Returns
/// the pre-fire potential H; the forward and the backward's recomputation of
/// H both go through here, so they give the same bits.
template <typename Charge, typename Reset, bool Fma>
inline __attribute__((always_inline)) float
chargeElement(const Charge &charge, const Reset &reset, float threshold, float scale,
              float shift, float x, float &v) {
  float hi = charge(v, affineOf<Fma>(x, scale, shift));
  v = reset(hi, fire(hi, threshold));
  return hi;
}

/// What a step keeps of each element: its spike (the forward) or its
/// pre-fire potential H (the backward's recomputation).
enum class StepOutput { Spikes, Potentials };

template <StepOutput Out> inline float stepOutput(float h, float threshold) {
  if constexpr (Out == StepOutput::Spikes)
    return fire(h, threshold);
  else
    return h;
}

/// One step of one plane (one channel). Returns the spikes it wrote (0 for
/// potentials): an integer sum in the same loop, which vectorises with it.
template <typename Charge, typename Reset, bool Fma, StepOutput Out>
SNN_BLOCK_FMA_TARGET int64_t forwardPlaneStep(const Charge &charge, const Reset &reset,
                                              float threshold, float scale, float shift,
                                              const float *__restrict x, float *__restrict v,
                                              float *__restrict out, int64_t n) {
  const Charge ch = charge;
  const Reset rs = reset;
  int32_t fired = 0;
  for (int64_t i = 0; i < n; ++i) {
    float o = stepOutput<Out>(
        chargeElement<Charge, Reset, Fma>(ch, rs, threshold, scale, shift, x[i], v[i]),
        threshold);
    out[i] = o;
    if constexpr (Out == StepOutput::Spikes)
      fired += o != 0.0f;
  }
  return fired;
}

// NHWC steps are walked in chunks: a few whole pixels, or a run of one
// pixel's channels where a pixel holds more than kChunkFloats, every step of
// a chunk before the next chunk. The T steps' short interleaved streams keep
// more of memory's bandwidth busy than one step's whole band after another:
// a pass over a [4, 32, 64, 48, 48] input took 4.0-4.8 ms against 7.2-7.4
// ms band by band on this project's 2-core host. The chunk's potentials
// (or dL/dV) stay in a local array.
constexpr int64_t kChunkFloats = 64;

/// Pixels [first, first + pixels) of a band, channels [c0, c1) of each.
struct PixelChunk {
  int64_t first, pixels, c0, c1;
  int64_t width() const { return c1 - c0; }
  int64_t size() const { return pixels * width(); }
  /// The chunk's first element in the band, whose pixels are `channels` apart.
  int64_t offset(int64_t channels) const { return first * channels + c0; }
};

/// Calls fn(chunk) for the chunks of `pixels` pixels of `channels` each, in
/// memory order.
template <typename Fn> void forEachPixelChunk(int64_t pixels, int64_t channels, Fn &&fn) {
  if (channels >= kChunkFloats) {
    for (int64_t p = 0; p < pixels; ++p)
      for (int64_t c0 = 0; c0 < channels; c0 += kChunkFloats)
        fn(PixelChunk{p, 1, c0, std::min(channels, c0 + kChunkFloats)});
    return;
  }
  const int64_t group = kChunkFloats / channels;
  for (int64_t p = 0; p < pixels; p += group)
    fn(PixelChunk{p, std::min(group, pixels - p), 0, channels});
}

/// One step of a chunk of NHWC pixels: `pixels` pixels `stride` floats
/// apart, `width` channels of each (the affine's channel: the place in the
/// run); v holds the chunk's potentials densely.
template <typename Charge, typename Reset, bool Fma, StepOutput Out>
SNN_BLOCK_FMA_TARGET int64_t
forwardPixelsStep(const Charge &charge, const Reset &reset, float threshold,
                  const float *__restrict scale, const float *__restrict shift,
                  const float *__restrict x, float *__restrict v, float *__restrict out,
                  int64_t pixels, int64_t width, int64_t stride) {
  const Charge ch = charge;
  const Reset rs = reset;
  int32_t fired = 0;
  for (int64_t q = 0; q < pixels; ++q) {
    const int64_t o = q * stride;
    for (int64_t c = 0; c < width; ++c) {
      float s = stepOutput<Out>(chargeElement<Charge, Reset, Fma>(ch, rs, threshold, scale[c],
                                                                  shift[c], x[o + c],
                                                                  v[q * width + c]),
                                threshold);
      out[o + c] = s;
      if constexpr (Out == StepOutput::Spikes)
        fired += s != 0.0f;
    }
  }
  return fired;
}

/// The pre-fire potentials H of every step of a plane or an NHWC band of the
/// block's input, with the forward's expressions: the backward recomputes H
/// from the input, which BatchNorm's backward keeps anyway, instead of the
/// forward writing a tensor as large as the input and the backward reading
/// it back.
struct PotentialsRecompute {
  const NeuronConfig &config;
  float k;
  const BlockDims &dims;
  const BlockAffine &affine;

  /// Plane (sample, channel) of every step from `x` (its step 0), into
  /// h[t * image + i]; `v`: scratch of one plane.
  void plane(const float *x, int64_t channel, float *v, float *h) const {
    visit([&](const auto &charge, const auto &reset, float vInit, auto fma) {
      using Charge = std::decay_t<decltype(charge)>;
      using Reset = std::decay_t<decltype(reset)>;
      const int64_t image = dims.image();
      std::fill(v, v + image, vInit);
      for (int64_t t = 0; t < dims.steps; ++t)
        forwardPlaneStep<Charge, Reset, decltype(fma)::value, StepOutput::Potentials>(
            charge, reset, config.vThreshold, affine.scale[channel], affine.shift[channel],
            x + t * dims.inputStepStride, v, h + t * image, image);
    });
  }

  /// `pixels` NHWC pixels of every step from `x` (the band's start at step
  /// 0), into h[t * pixels * C + i].
  void band(const float *x, int64_t pixels, float *h) const {
    visit([&](const auto &charge, const auto &reset, float vInit, auto fma) {
      using Charge = std::decay_t<decltype(charge)>;
      using Reset = std::decay_t<decltype(reset)>;
      const int64_t channels = dims.channels, count = pixels * channels;
      float v[kChunkFloats];
      forEachPixelChunk(pixels, channels, [&](const PixelChunk &chunk) {
        const int64_t o = chunk.offset(channels);
        std::fill(v, v + chunk.size(), vInit);
        for (int64_t t = 0; t < dims.steps; ++t)
          forwardPixelsStep<Charge, Reset, decltype(fma)::value, StepOutput::Potentials>(
              charge, reset, config.vThreshold, affine.scale + chunk.c0,
              affine.shift + chunk.c0, x + t * dims.inputStepStride + o, v, h + t * count + o,
              chunk.pixels, chunk.width(), channels);
      });
    });
  }

private:
  /// fn(charge, reset, vInit, fma) with the neuron's forward functors.
  template <typename Fn> void visit(Fn &&fn) const {
    visitForwardEquations<float>(config, k, [&](const auto &charge, const auto &reset,
                                                float vInit) {
      if (affine.fma)
        fn(charge, reset, vInit, std::true_type{});
      else
        fn(charge, reset, vInit, std::false_type{});
    });
  }
};

/// Max pool of one plane of spikes (0 or 1): the first 1 in row-major window
/// order wins, offset 0 when the window has none (ATen's first maximum).
/// Spikes are 0 or 1, so both are arithmetic, without a branch: the window
/// positions are visited last to first and each 1 moves the offset to its
/// own (code += s * (pos - code)), vectorised across the output row.
/// `best` and `code` are scratch rows of outWidth floats.
template <int64_t KH, int64_t KW, int64_t SH, int64_t SW>
struct FixedWindow {
  static int64_t kernelH(const MaxPoolWindow &) { return KH; }
  static int64_t kernelW(const MaxPoolWindow &) { return KW; }
  static int64_t strideH(const MaxPoolWindow &) { return SH; }
  static int64_t strideW(const MaxPoolWindow &) { return SW; }
};
struct AnyWindow {
  static int64_t kernelH(const MaxPoolWindow &w) { return w.kernelH; }
  static int64_t kernelW(const MaxPoolWindow &w) { return w.kernelW; }
  static int64_t strideH(const MaxPoolWindow &w) { return w.strideH; }
  static int64_t strideW(const MaxPoolWindow &w) { return w.strideW; }
};

/// poolPlane for a window known at compile time (the models' 2x2, stride 2:
/// the strided loads vectorise) or any window.
template <typename Window>
SNN_BLOCK_TARGET void poolPlaneWith(const float *__restrict spikes, const BlockDims &dims,
                                    float *__restrict out, uint8_t *__restrict argmax,
                                    float *__restrict best, float *__restrict code) {
  const int64_t kh = Window::kernelH(dims.pool), kw = Window::kernelW(dims.pool);
  const int64_t sh = Window::strideH(dims.pool), sw = Window::strideW(dims.pool);
  const int64_t outWidth = dims.outWidth, width = dims.width;
  for (int64_t oy = 0; oy < dims.outHeight; ++oy) {
    for (int64_t ox = 0; ox < outWidth; ++ox)
      best[ox] = code[ox] = 0.0f;
    for (int64_t pos = kh * kw - 1; pos >= 0; --pos) {
      const float *row = spikes + (oy * sh + pos / kw) * width + pos % kw;
      const float position = float(pos);
      for (int64_t ox = 0; ox < outWidth; ++ox) {
        float s = row[ox * sw];
        best[ox] = std::max(best[ox], s);
        code[ox] += s * (position - code[ox]);
      }
    }
    float *o = out + oy * outWidth;
    for (int64_t ox = 0; ox < outWidth; ++ox)
      o[ox] = best[ox];
    if (argmax)
      for (int64_t ox = 0; ox < outWidth; ++ox)
        argmax[oy * outWidth + ox] = uint8_t(code[ox]);
  }
}

void poolPlane(const float *spikes, const BlockDims &dims, float *out, uint8_t *argmax,
               float *best, float *code) {
  const MaxPoolWindow &w = dims.pool;
  if (w.kernelH == 2 && w.kernelW == 2 && w.strideH == 2 && w.strideW == 2)
    return poolPlaneWith<FixedWindow<2, 2, 2, 2>>(spikes, dims, out, argmax, best, code);
  poolPlaneWith<AnyWindow>(spikes, dims, out, argmax, best, code);
}

template <typename Charge, typename Reset, bool Fma>
int64_t forwardPlanes(const Charge &charge, const Reset &reset, float threshold, float vInit,
                      const BlockDims &dims, const BlockAffine &affine, const float *x,
                      float *output, uint8_t *argmax) {
  const int64_t image = dims.image(), outImage = dims.outImage();
  std::atomic<int64_t> total{0};
  at::parallel_for(0, dims.planes, planesPerTask(dims), [&](int64_t begin, int64_t end) {
    int64_t fired = 0;
    std::vector<float> v(static_cast<size_t>(image)),
        spikes(dims.pooled ? static_cast<size_t>(image + 2 * outImage) : 0);
    for (int64_t p = begin; p < end; ++p) {
      int64_t c = p % dims.channels;
      std::fill(v.begin(), v.end(), vInit);
      for (int64_t t = 0; t < dims.steps; ++t) {
        int64_t plane = t * dims.planes + p;
        float *out = output + plane * outImage;
        float *s = dims.pooled ? spikes.data() : out;
        fired += forwardPlaneStep<Charge, Reset, Fma, StepOutput::Spikes>(
            charge, reset, threshold, affine.scale[c], affine.shift[c],
            x + t * dims.inputStepStride + p * image, v.data(), s, image);
        if (dims.pooled)
          poolPlane(s, dims, out, argmax ? argmax + plane * outImage : nullptr, s + image,
                    s + image + outImage);
      }
    }
    total += fired;
  });
  return total.load();
}

/// dL/dspikes of one plane from dL/dpooled: added to +0 at each window's
/// argmax in output order, as ATen's max-pool backward does.
/// unpoolPlane where the windows neither overlap nor skip pixels: every
/// pixel written once (0 + g at the argmax, as the scatter gives), no
/// division per window; the rows and columns no window covers get 0.
void unpoolTiledPlane(const float *gradOut, const uint8_t *argmax, const BlockDims &dims,
                      float *grad) {
  const MaxPoolWindow &w = dims.pool;
  const int64_t coveredW = dims.outWidth * w.kernelW, coveredH = dims.outHeight * w.kernelH;
  for (int64_t oy = 0; oy < dims.outHeight; ++oy)
    for (int64_t ky = 0; ky < w.kernelH; ++ky) {
      float *row = grad + (oy * w.kernelH + ky) * dims.width;
      const float *g = gradOut + oy * dims.outWidth;
      const uint8_t *a = argmax + oy * dims.outWidth;
      for (int64_t ox = 0; ox < dims.outWidth; ++ox)
        for (int64_t kx = 0; kx < w.kernelW; ++kx)
          row[ox * w.kernelW + kx] = a[ox] == ky * w.kernelW + kx ? 0.0f + g[ox] : 0.0f;
      std::fill(row + coveredW, row + dims.width, 0.0f);
    }
  std::fill(grad + coveredH * dims.width, grad + dims.image(), 0.0f);
}

void unpoolPlane(const float *gradOut, const uint8_t *argmax, const BlockDims &dims,
                 float *grad) {
  const MaxPoolWindow &w = dims.pool;
  if (w.kernelH == w.strideH && w.kernelW == w.strideW) {
    unpoolTiledPlane(gradOut, argmax, dims, grad);
    return;
  }
  std::fill(grad, grad + dims.image(), 0.0f);
  for (int64_t oy = 0; oy < dims.outHeight; ++oy)
    for (int64_t ox = 0; ox < dims.outWidth; ++ox) {
      int64_t o = oy * dims.outWidth + ox;
      int64_t ky = argmax[o] / w.kernelW, kx = argmax[o] % w.kernelW;
      grad[(oy * w.strideH + ky) * dims.width + ox * w.strideW + kx] += gradOut[o];
    }
}

/// What one backward step of one plane reads and writes.
struct PlaneStep {
  const float *gradSpikes, *h, *hPrev, *x;
  float scale, shift;
  float *gv, *accK, *gradInput;
};

/// BPTT of one element of one step (NeuronKernelsImpl.h's Bptt::step, the
/// same expressions), plus PLIF's dL/dk. `First`: step 0, whose previous
/// potential is the initial one. hPrev[i] and x[i] are read for PLIF only
/// (hPrev only after step 0; either may be null otherwise).
template <typename Surr, typename Reset, typename ChargeGrad, bool Fma, bool First>
inline __attribute__((always_inline)) void
backwardElement(const Surr &sg, const Reset &rs, const ChargeGrad &cg, float threshold,
                float keep, float vInit, float scale, float shift, float ht,
                const float *hPrev, float gs, const float *x, int64_t i, float &gv,
                float &accK, float &gx) {
  float s = fire(ht, threshold);
  float g = gv;
  float dh = (gs + g * rs.dVdS(ht) * keep) * sg(ht - threshold) + g * rs.dVdH(s);
  float gy = dh * cg.dX;
  gv = dh * cg.dV;
  if constexpr (ChargeGrad::kLearnsK) {
    float vPrev = vInit;
    if constexpr (!First)
      vPrev = rs(hPrev[i], fire(hPrev[i], threshold));
    accK += dh * cg.dK(affineOf<Fma>(x[i], scale, shift), vPrev);
  }
  gx = gy;
}

/// The parameters of a backward step's loop: every array is a restrict
/// parameter (GCC honours restrict on parameters only, and otherwise versions
/// the loop on aliasing checks).
#define SNN_PLANE_STEP_PARAMETERS                                                           \
  const Surr sg, const Reset rs, const ChargeGrad cg, float threshold, float keep,          \
      float vInit, float scale, float shift, const float *__restrict h,                     \
      const float *__restrict hPrev, const float *__restrict gs, const float *__restrict x, \
      float *__restrict gv, float *__restrict accK, float *__restrict gx, int64_t n
#define SNN_PIXELS_STEP_PARAMETERS                                                          \
  const Surr sg, const Reset rs, const ChargeGrad cg, float threshold, float keep,          \
      float vInit, const float *__restrict scale, const float *__restrict shift,            \
      const float *__restrict h, const float *__restrict hPrev, const float *__restrict gs, \
      const float *__restrict x, float *__restrict gv, float *__restrict accK,              \
      float *__restrict gx, int64_t pixels, int64_t width, int64_t stride

/// BPTT of one step of one plane, inlined into the targets below.
template <typename Surr, typename Reset, typename ChargeGrad, bool Fma, bool First>
inline __attribute__((always_inline)) void backwardPlaneLoop(SNN_PLANE_STEP_PARAMETERS) {
  for (int64_t i = 0; i < n; ++i)
    backwardElement<Surr, Reset, ChargeGrad, Fma, First>(sg, rs, cg, threshold, keep, vInit,
                                                         scale, shift, h[i], hPrev, gs[i], x, i,
                                                         gv[i], accK[i], gx[i]);
}

/// BPTT of one step of a chunk of NHWC pixels (forwardPixelsStep's layout;
/// gv dense like its v), inlined into the targets below.
template <typename Surr, typename Reset, typename ChargeGrad, bool Fma, bool First>
inline __attribute__((always_inline)) void backwardPixelsLoop(SNN_PIXELS_STEP_PARAMETERS) {
  for (int64_t q = 0; q < pixels; ++q) {
    const int64_t o = q * stride;
    for (int64_t c = 0; c < width; ++c)
      backwardElement<Surr, Reset, ChargeGrad, Fma, First>(
          sg, rs, cg, threshold, keep, vInit, scale[c], shift[c], h[o + c], hPrev, gs[o + c],
          x, o + c, gv[q * width + c], accK[o + c], gx[o + c]);
  }
}

// The loops run under the block's target, but PLIF's dL/dk with a fused BatchNorm
// affine (Fma) under the FMA one: its affine is an fmaf, which without FMA in the
// target is a call to libm per element and keeps the loop scalar (40 % of the step of a
// conv -> BatchNorm -> PLIF model). Every other step keeps the plain target, under
// which GCC 12 vectorises it (not under "avx2,fma").
template <typename Surr, typename Reset, typename ChargeGrad, bool Fma, bool First>
SNN_BLOCK_TARGET void backwardPlaneStepPlain(SNN_PLANE_STEP_PARAMETERS) {
  backwardPlaneLoop<Surr, Reset, ChargeGrad, Fma, First>(sg, rs, cg, threshold, keep, vInit,
                                                         scale, shift, h, hPrev, gs, x, gv, accK,
                                                         gx, n);
}
template <typename Surr, typename Reset, typename ChargeGrad, bool Fma, bool First>
SNN_BLOCK_FMA_TARGET void backwardPlaneStepFma(SNN_PLANE_STEP_PARAMETERS) {
  backwardPlaneLoop<Surr, Reset, ChargeGrad, Fma, First>(sg, rs, cg, threshold, keep, vInit,
                                                         scale, shift, h, hPrev, gs, x, gv, accK,
                                                         gx, n);
}
template <typename Surr, typename Reset, typename ChargeGrad, bool Fma, bool First>
SNN_BLOCK_TARGET void backwardPixelsStepPlain(SNN_PIXELS_STEP_PARAMETERS) {
  backwardPixelsLoop<Surr, Reset, ChargeGrad, Fma, First>(sg, rs, cg, threshold, keep, vInit,
                                                          scale, shift, h, hPrev, gs, x, gv,
                                                          accK, gx, pixels, width, stride);
}
template <typename Surr, typename Reset, typename ChargeGrad, bool Fma, bool First>
SNN_BLOCK_FMA_TARGET void backwardPixelsStepFma(SNN_PIXELS_STEP_PARAMETERS) {
  backwardPixelsLoop<Surr, Reset, ChargeGrad, Fma, First>(sg, rs, cg, threshold, keep, vInit,
                                                          scale, shift, h, hPrev, gs, x, gv,
                                                          accK, gx, pixels, width, stride);
}

/// Whether a backward step runs under the FMA target (above).
template <typename ChargeGrad, bool Fma>
inline constexpr bool kFmaBackward = Fma && ChargeGrad::kLearnsK;

/// backwardPixelsStepPlain or backwardPixelsStepFma.
template <typename Surr, typename Reset, typename ChargeGrad, bool Fma, bool First>
void backwardPixelsStep(SNN_PIXELS_STEP_PARAMETERS) {
  if constexpr (kFmaBackward<ChargeGrad, Fma>)
    backwardPixelsStepFma<Surr, Reset, ChargeGrad, Fma, First>(
        sg, rs, cg, threshold, keep, vInit, scale, shift, h, hPrev, gs, x, gv, accK, gx, pixels,
        width, stride);
  else
    backwardPixelsStepPlain<Surr, Reset, ChargeGrad, Fma, First>(
        sg, rs, cg, threshold, keep, vInit, scale, shift, h, hPrev, gs, x, gv, accK, gx, pixels,
        width, stride);
}
#undef SNN_PLANE_STEP_PARAMETERS
#undef SNN_PIXELS_STEP_PARAMETERS

/// backwardPlaneStepPlain or backwardPlaneStepFma with the step's arrays from `a`.
template <typename Surr, typename Reset, typename ChargeGrad, bool Fma, bool First>
void backwardPlaneStepOf(const Surr &sg, const Reset &rs, const ChargeGrad &cg, float threshold,
                         float keep, float vInit, const PlaneStep &a, int64_t n) {
  if constexpr (kFmaBackward<ChargeGrad, Fma>)
    backwardPlaneStepFma<Surr, Reset, ChargeGrad, Fma, First>(
        sg, rs, cg, threshold, keep, vInit, a.scale, a.shift, a.h, a.hPrev, a.gradSpikes, a.x,
        a.gv, a.accK, a.gradInput, n);
  else
    backwardPlaneStepPlain<Surr, Reset, ChargeGrad, Fma, First>(
        sg, rs, cg, threshold, keep, vInit, a.scale, a.shift, a.h, a.hPrev, a.gradSpikes, a.x,
        a.gv, a.accK, a.gradInput, n);
}

/// sum(values[0..n)) in double, eight independent chains.
SNN_BLOCK_TARGET double sumAsDouble(const float *values, int64_t n) {
  double chains[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k)
      chains[k] += double(values[i + k]);
  for (; i < n; ++i)
    chains[0] += double(values[i]);
  double total = 0.0;
  for (double c : chains)
    total += c;
  return total;
}

/// out = ((g_0 + g_1) + g_2) + ... over `steps` runs of `count` floats: a
/// repeated input's gradient (BlockGradients::sumSteps), in step order.
SNN_BLOCK_TARGET void sumOverSteps(const float *__restrict g, int64_t steps, int64_t count,
                                   float *__restrict out) {
  std::copy(g, g + count, out);
  for (int64_t t = 1; t < steps; ++t)
    for (int64_t i = 0; i < count; ++i)
      out[i] += g[t * count + i];
}

template <typename Surr, typename Reset, typename ChargeGrad, bool Fma>
double backwardPlanes(const Surr &surrogate, const Reset &reset, const ChargeGrad &charge,
                      float threshold, float keep, float vInit, const BlockDims &dims,
                      const BlockAffine &affine, const BlockGradients &grads,
                      const PotentialsRecompute &potentials) {
  const int64_t image = dims.image(), outImage = dims.outImage();
  std::vector<double> planeK(size_t(ChargeGrad::kLearnsK ? dims.planes : 0));
  at::parallel_for(0, dims.planes, planesPerTask(dims), [&](int64_t begin, int64_t end) {
    std::vector<float> gv(static_cast<size_t>(image)), acc(static_cast<size_t>(image)),
        unpooled(dims.pooled ? static_cast<size_t>(image) : 0),
        hs(static_cast<size_t>(dims.steps * image)),
        stepGrads(grads.sumSteps ? static_cast<size_t>(dims.steps * image) : 0);
    for (int64_t p = begin; p < end; ++p) {
      int64_t c = p % dims.channels;
      // The plane's H of every step, in cache for the BPTT below (gv: scratch).
      potentials.plane(grads.x + p * image, c, gv.data(), hs.data());
      std::fill(gv.begin(), gv.end(), 0.0f);
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t t = dims.steps - 1; t >= 0; --t) {
        int64_t plane = t * dims.planes + p;
        const float *gs = grads.gradOutput + plane * outImage;
        if (dims.pooled) {
          unpoolPlane(gs, grads.argmax + plane * outImage, dims, unpooled.data());
          gs = unpooled.data();
        }
        PlaneStep step{gs,
                       hs.data() + t * image,
                       t > 0 ? hs.data() + (t - 1) * image : nullptr,
                       grads.x + t * dims.inputStepStride + p * image,
                       affine.scale[c],
                       affine.shift[c],
                       gv.data(),
                       acc.data(),
                       grads.sumSteps ? stepGrads.data() + t * image
                                      : grads.gradInput + plane * image};
        if (t > 0)
          backwardPlaneStepOf<Surr, Reset, ChargeGrad, Fma, false>(
              surrogate, reset, charge, threshold, keep, vInit, step, image);
        else
          backwardPlaneStepOf<Surr, Reset, ChargeGrad, Fma, true>(
              surrogate, reset, charge, threshold, keep, vInit, step, image);
        if (grads.normSum && !grads.sumSteps) // while the plane's gradient is in cache
          batchNormPlaneSums(step.gradInput, step.x, grads.normMean[c], image,
                             grads.normSum[plane], grads.normDot[plane]);
      }
      if (grads.sumSteps) {
        float *gradStep = grads.gradInput + p * image;
        sumOverSteps(stepGrads.data(), dims.steps, image, gradStep);
        if (grads.normSum)
          batchNormPlaneSums(gradStep, grads.x + p * image, grads.normMean[c], image,
                             grads.normSum[p], grads.normDot[p]);
      }
      if constexpr (ChargeGrad::kLearnsK)
        planeK[size_t(p)] = sumAsDouble(acc.data(), image);
    }
  });
  double total = 0.0; // plane order: the same for any thread count
  for (double value : planeK)
    total += value;
  return total;
}

// NHWC blocks. One parallel task per run of samples; per sample, a band of
// image rows goes through all T steps before the next band, so the band's
// state stays in cache (a whole NHWC image is C planes at once): the rows of
// one pooling window when windows neither overlap nor skip rows, a few rows
// without a pool, else the whole image.

int64_t bandRows(const BlockDims &dims) {
  if (!dims.pooled)
    return std::clamp<int64_t>(8192 / std::max<int64_t>(1, dims.width * dims.channels), 1,
                               dims.height);
  if (dims.pool.kernelH == dims.pool.strideH)
    return dims.pool.strideH;
  return dims.height;
}

/// The pooled rows whose windows lie in image rows [r0, r1).
std::pair<int64_t, int64_t> pooledRowsOf(const BlockDims &dims, int64_t r0, int64_t r1) {
  if (!dims.pooled)
    return {0, 0};
  const int64_t kh = dims.pool.kernelH, sh = dims.pool.strideH;
  int64_t begin = (r0 + sh - 1) / sh;
  int64_t end = r1 >= kh ? std::min(dims.outHeight, (r1 - kh) / sh + 1) : 0;
  return {begin, std::max(begin, end)};
}

int64_t samplesPerTask(const BlockDims &dims) {
  return std::max<int64_t>(
      1, kMinBlockWork / std::max<int64_t>(1, dims.steps * dims.image() * dims.channels));
}

/// Eight floats as one value (GCC's vector extension: one AVX register, two
/// SSE ones in the baseline build).
typedef float Float8 __attribute__((vector_size(32)));

/// The window of one pooled pixel over eight channels from `px0` (the
/// window's first pixel): poolPlaneWith's arithmetic, eight channels a value.
SNN_BLOCK_TARGET inline void poolChannels8(const float *px0, const MaxPoolWindow &w,
                                           int64_t rowStride, int64_t pixelStride, float *out,
                                           uint8_t *argmax) {
  typedef int32_t Int8 __attribute__((vector_size(32)));
  Float8 best = {}, code = {};
  for (int64_t ky = w.kernelH - 1; ky >= 0; --ky)
    for (int64_t kx = w.kernelW - 1; kx >= 0; --kx) {
      Float8 v;
      std::memcpy(&v, px0 + ky * rowStride + kx * pixelStride, sizeof(v));
      const float pos = float(ky * w.kernelW + kx);
      best = best < v ? v : best;
      code += v * (pos - code);
    }
  std::memcpy(out, &best, sizeof(best));
  if (!argmax)
    return;
  // Codes are whole numbers below 256: truncated to int32, then a byte each.
  Int8 codes = __builtin_convertvector(code, Int8);
#if defined(__SSE2__)
  __m128i halves[2];
  std::memcpy(halves, &codes, sizeof(codes));
  __m128i words = _mm_packs_epi32(halves[0], halves[1]);
  _mm_storel_epi64(reinterpret_cast<__m128i *>(argmax), _mm_packus_epi16(words, words));
#else
  for (int c = 0; c < 8; ++c)
    argmax[c] = uint8_t(codes[c]);
#endif
}

/// poolChannels8 for the last `width` < 8 channels.
void poolChannelsTail(const float *px0, const MaxPoolWindow &w, int64_t rowStride,
                      int64_t pixelStride, int64_t width, float *out, uint8_t *argmax) {
  for (int64_t c = 0; c < width; ++c) {
    float best = 0.0f, code = 0.0f;
    for (int64_t ky = w.kernelH - 1; ky >= 0; --ky)
      for (int64_t kx = w.kernelW - 1; kx >= 0; --kx) {
        float v = px0[ky * rowStride + kx * pixelStride + c];
        best = std::max(best, v);
        code += v * (float(ky * w.kernelW + kx) - code);
      }
    out[c] = best;
    if (argmax)
      argmax[c] = uint8_t(code);
  }
}

/// Max pool of pooled rows [oyBegin, oyEnd) of one NHWC image of spikes held
/// from image row `rowBase` on, eight channels at a time. `out` and `argmax`
/// are the image's.
SNN_BLOCK_TARGET void poolPixels(const float *spikes, const BlockDims &dims, int64_t rowBase,
                                 int64_t oyBegin, int64_t oyEnd, float *out, uint8_t *argmax) {
  const MaxPoolWindow &w = dims.pool;
  const int64_t channels = dims.channels, rowStride = dims.width * channels;
  for (int64_t oy = oyBegin; oy < oyEnd; ++oy)
    for (int64_t ox = 0; ox < dims.outWidth; ++ox) {
      const float *px0 =
          spikes + (oy * w.strideH - rowBase) * rowStride + ox * w.strideW * channels;
      const int64_t o = (oy * dims.outWidth + ox) * channels;
      for (int64_t c = 0; c < channels; c += 8) {
        uint8_t *a = argmax ? argmax + o + c : nullptr;
        if (c + 8 <= channels)
          poolChannels8(px0 + c, w, rowStride, channels, out + o + c, a);
        else
          poolChannelsTail(px0 + c, w, rowStride, channels, channels - c, out + o + c, a);
      }
    }
}

/// unpoolPlane for the band of `rows` image rows from `rowBase` of one NHWC
/// image: dL/dspikes from the gradient of its pooled rows [oyBegin, oyEnd).
/// One pixel's channels of a tiling window's unpooled gradient: the pooled
/// gradient where the argmax is this pixel's offset `k`, else 0. 0 + g, as
/// the scatter adds g to a zero (a -0 gradient becomes +0 either way).
SNN_BLOCK_TARGET void unpoolWindowPixel(const float *__restrict gradOut,
                                        const uint8_t *__restrict argmax, uint8_t k,
                                        float *__restrict grad, int64_t channels) {
  for (int64_t c = 0; c < channels; ++c)
    grad[c] = argmax[c] == k ? 0.0f + gradOut[c] : 0.0f;
}

/// unpoolPixels for a band that is exactly one row of windows that neither
/// overlap nor skip pixels: every pixel written once, no scatter.
void unpoolWindowRow(const float *gradOut, const uint8_t *argmax, const BlockDims &dims,
                     int64_t oy, float *grad) {
  const MaxPoolWindow &w = dims.pool;
  const int64_t channels = dims.channels, covered = dims.outWidth * w.kernelW;
  for (int64_t ky = 0; ky < w.kernelH; ++ky) {
    float *row = grad + ky * dims.width * channels;
    for (int64_t ox = 0; ox < dims.outWidth; ++ox) {
      const int64_t o = (oy * dims.outWidth + ox) * channels;
      for (int64_t kx = 0; kx < w.kernelW; ++kx)
        unpoolWindowPixel(gradOut + o, argmax + o, uint8_t(ky * w.kernelW + kx),
                          row + (ox * w.kernelW + kx) * channels, channels);
    }
    std::fill(row + covered * channels, row + dims.width * channels, 0.0f);
  }
}

void unpoolPixels(const float *gradOut, const uint8_t *argmax, const BlockDims &dims,
                  int64_t rowBase, int64_t rows, int64_t oyBegin, int64_t oyEnd, float *grad) {
  const MaxPoolWindow &w = dims.pool;
  const int64_t channels = dims.channels;
  if (w.kernelH == w.strideH && w.kernelW == w.strideW && rows == w.kernelH &&
      oyEnd == oyBegin + 1 && rowBase == oyBegin * w.strideH) {
    unpoolWindowRow(gradOut, argmax, dims, oyBegin, grad);
    return;
  }
  std::fill(grad, grad + rows * dims.width * channels, 0.0f);
  for (int64_t oy = oyBegin; oy < oyEnd; ++oy)
    for (int64_t ox = 0; ox < dims.outWidth; ++ox) {
      const int64_t o = (oy * dims.outWidth + ox) * channels;
      for (int64_t c = 0; c < channels; ++c) {
        int64_t ky = argmax[o + c] / w.kernelW, kx = argmax[o + c] % w.kernelW;
        grad[((oy * w.strideH + ky - rowBase) * dims.width + ox * w.strideW + kx) * channels +
             c] += gradOut[o + c];
      }
    }
}

template <typename Charge, typename Reset, bool Fma>
int64_t forwardPixels(const Charge &charge, const Reset &reset, float threshold, float vInit,
                      const BlockDims &dims, const BlockAffine &affine, const float *x,
                      float *output, uint8_t *argmax) {
  const int64_t channels = dims.channels, samples = dims.samples();
  const int64_t imageSize = dims.image() * channels, outSize = dims.outImage() * channels;
  const int64_t rowSize = dims.width * channels, band = bandRows(dims);
  const int64_t bandSize = band * rowSize;
  std::atomic<int64_t> total{0};
  at::parallel_for(0, samples, samplesPerTask(dims), [&](int64_t begin, int64_t end) {
    int64_t fired = 0;
    std::vector<float> spikes(dims.pooled ? size_t(dims.steps * bandSize) : 0);
    float v[kChunkFloats];
    for (int64_t n = begin; n < end; ++n)
      for (int64_t r0 = 0; r0 < dims.height; r0 += band) {
        const int64_t rows = std::min(band, dims.height - r0), offset = r0 * rowSize;
        forEachPixelChunk(rows * dims.width, channels, [&](const PixelChunk &chunk) {
          const int64_t o = chunk.offset(channels);
          std::fill(v, v + chunk.size(), vInit);
          for (int64_t t = 0; t < dims.steps; ++t) {
            float *s = dims.pooled ? spikes.data() + t * bandSize
                                   : output + (t * samples + n) * outSize + offset;
            fired += forwardPixelsStep<Charge, Reset, Fma, StepOutput::Spikes>(
                charge, reset, threshold, affine.scale + chunk.c0, affine.shift + chunk.c0,
                x + t * dims.inputStepStride + n * imageSize + offset + o, v, s + o,
                chunk.pixels, chunk.width(), channels);
          }
        });
        if (!dims.pooled)
          continue;
        auto [oyBegin, oyEnd] = pooledRowsOf(dims, r0, r0 + rows);
        for (int64_t t = 0; t < dims.steps; ++t) {
          const int64_t image = t * samples + n;
          poolPixels(spikes.data() + t * bandSize, dims, r0, oyBegin, oyEnd,
                     output + image * outSize, argmax ? argmax + image * outSize : nullptr);
        }
      }
    total += fired;
  });
  return total.load();
}

/// Where the BPTT of one NHWC band of one sample reads and writes, each at
/// the band's start in step 0 (`count` elements of a step).
struct BandStep {
  const float *gradSpikes; // dL/dspikes, steps gradStepStride apart
  int64_t gradStepStride;
  const float *hs;         // H, steps `count` apart
  const float *x;          // the input, steps dims.inputStepStride apart
  float *gradInput;        // steps inputGradStepStride apart
  int64_t inputGradStepStride, count;
  float *acc;              // PLIF's dL/dk terms of the band, per element
};

/// BPTT of one chunk of a band over every step, last to first; `gv`: the
/// chunk's dL/dV.
template <typename Surr, typename Reset, typename ChargeGrad, bool Fma>
void backwardBandChunk(const Surr &surrogate, const Reset &reset, const ChargeGrad &charge,
                       float threshold, float keep, float vInit, const BlockDims &dims,
                       const BlockAffine &affine, const BandStep &b, const PixelChunk &chunk,
                       float *gv) {
  const int64_t channels = dims.channels, o = chunk.offset(channels);
  std::fill(gv, gv + chunk.size(), 0.0f);
  for (int64_t t = dims.steps - 1; t >= 0; --t) {
    const float *h = b.hs + t * b.count + o;
    const float *gs = b.gradSpikes + t * b.gradStepStride + o;
    const float *x = b.x + t * dims.inputStepStride + o;
    float *gx = b.gradInput + t * b.inputGradStepStride + o;
    if (t > 0)
      backwardPixelsStep<Surr, Reset, ChargeGrad, Fma, false>(
          surrogate, reset, charge, threshold, keep, vInit, affine.scale + chunk.c0,
          affine.shift + chunk.c0, h, h - b.count, gs, x, gv, b.acc + o, gx, chunk.pixels,
          chunk.width(), channels);
    else
      backwardPixelsStep<Surr, Reset, ChargeGrad, Fma, true>(
          surrogate, reset, charge, threshold, keep, vInit, affine.scale + chunk.c0,
          affine.shift + chunk.c0, h, nullptr, gs, x, gv, b.acc + o, gx, chunk.pixels,
          chunk.width(), channels);
  }
}

template <typename Surr, typename Reset, typename ChargeGrad, bool Fma>
double backwardPixels(const Surr &surrogate, const Reset &reset, const ChargeGrad &charge,
                      float threshold, float keep, float vInit, const BlockDims &dims,
                      const BlockAffine &affine, const BlockGradients &grads,
                      const PotentialsRecompute &potentials) {
  const int64_t channels = dims.channels, samples = dims.samples();
  const int64_t imageSize = dims.image() * channels, outSize = dims.outImage() * channels;
  const int64_t rowSize = dims.width * channels, band = bandRows(dims);
  const int64_t bandSize = band * rowSize;
  std::vector<double> sampleK(size_t(ChargeGrad::kLearnsK ? samples : 0));
  at::parallel_for(0, samples, samplesPerTask(dims), [&](int64_t begin, int64_t end) {
    std::vector<float> acc(static_cast<size_t>(bandSize)), hs(size_t(dims.steps * bandSize)),
        unpooled(dims.pooled ? size_t(dims.steps * bandSize) : 0),
        stepGrads(grads.sumSteps ? size_t(dims.steps * bandSize) : 0);
    float gv[kChunkFloats];
    // BatchNorm's plane sums of each step's image (of the one summed step), a band at a time.
    std::vector<BatchNormPixelSums> norm;
    if (grads.normSum)
      norm.assign(size_t(grads.sumSteps ? 1 : dims.steps),
                  BatchNormPixelSums(channels, dims.image()));
    for (int64_t n = begin; n < end; ++n) {
      double k = 0.0;
      for (int64_t r0 = 0; r0 < dims.height; r0 += band) {
        const int64_t rows = std::min(band, dims.height - r0), offset = r0 * rowSize;
        const int64_t pixels = rows * dims.width, count = pixels * channels;
        // The band's H and dL/dspikes of every step, in cache for the BPTT.
        potentials.band(grads.x + n * imageSize + offset, pixels, hs.data());
        float *gradInput = grads.gradInput + n * imageSize + offset;
        BandStep b{grads.gradOutput + n * outSize + offset, samples * outSize, hs.data(),
                   grads.x + n * imageSize + offset,
                   grads.sumSteps ? stepGrads.data() : gradInput,
                   grads.sumSteps ? count : samples * imageSize, count, acc.data()};
        if (dims.pooled) {
          auto [oyBegin, oyEnd] = pooledRowsOf(dims, r0, r0 + rows);
          for (int64_t t = 0; t < dims.steps; ++t) {
            const int64_t image = t * samples + n;
            unpoolPixels(grads.gradOutput + image * outSize, grads.argmax + image * outSize,
                         dims, r0, rows, oyBegin, oyEnd, unpooled.data() + t * count);
          }
          b.gradSpikes = unpooled.data();
          b.gradStepStride = count;
        }
        std::fill(acc.begin(), acc.begin() + count, 0.0f);
        forEachPixelChunk(pixels, channels, [&](const PixelChunk &chunk) {
          backwardBandChunk<Surr, Reset, ChargeGrad, Fma>(surrogate, reset, charge, threshold,
                                                          keep, vInit, dims, affine, b, chunk,
                                                          gv);
        });
        if (grads.sumSteps) {
          sumOverSteps(stepGrads.data(), dims.steps, count, gradInput);
          b.gradInput = gradInput;
        }
        for (int64_t t = 0; t < int64_t(norm.size()); ++t)
          norm[size_t(t)].add(b.gradInput + t * b.inputGradStepStride,
                              b.x + t * dims.inputStepStride, grads.normMean, r0 * dims.width,
                              pixels);
        if constexpr (ChargeGrad::kLearnsK)
          k += sumAsDouble(acc.data(), count);
      }
      if constexpr (ChargeGrad::kLearnsK)
        sampleK[size_t(n)] = k;
      for (int64_t t = 0; t < int64_t(norm.size()); ++t) {
        const int64_t plane = (t * samples + n) * channels; // (t * N + n, 0) of the fold
        norm[size_t(t)].finish(grads.normSum + plane, grads.normDot + plane);
      }
    }
  });
  double total = 0.0; // sample order: the same for any thread count
  for (double value : sampleK)
    total += value;
  return total;
}

} // namespace

namespace SNN_BLOCK_ISA {

int64_t blockForward(const NeuronConfig &config, float k, const BlockDims &dims,
                     const BlockAffine &affine, const float *x, float *output,
                     uint8_t *argmax) {
  float threshold = config.vThreshold;
  int64_t fired = 0;
  visitForwardEquations<float>(config, k, [&](const auto &charge, const auto &reset, float v0) {
    using Charge = std::decay_t<decltype(charge)>;
    using Reset = std::decay_t<decltype(reset)>;
    auto run = [&](auto fma) {
      constexpr bool F = decltype(fma)::value;
      fired = dims.channelsLast
                  ? forwardPixels<Charge, Reset, F>(charge, reset, threshold, v0, dims, affine,
                                                    x, output, argmax)
                  : forwardPlanes<Charge, Reset, F>(charge, reset, threshold, v0, dims, affine,
                                                    x, output, argmax);
    };
    affine.fma ? run(std::true_type{}) : run(std::false_type{});
  });
  return fired;
}

double blockBackward(const NeuronConfig &config, float k, const BlockDims &dims,
                     const BlockAffine &affine, const BlockGradients &grads) {
  float threshold = config.vThreshold, keep = config.detachReset ? 0.0f : 1.0f;
  double gradK = 0.0;
  const PotentialsRecompute potentials{config, k, dims, affine};
  visitBackwardEquations<float>(config, k, [&](const auto &surrogate, const auto &reset,
                                               const auto &charge, float v0) {
    using Surr = std::decay_t<decltype(surrogate)>;
    using Reset = std::decay_t<decltype(reset)>;
    using Charge = std::decay_t<decltype(charge)>;
    auto run = [&](auto fma) {
      constexpr bool F = decltype(fma)::value;
      gradK = dims.channelsLast
                  ? backwardPixels<Surr, Reset, Charge, F>(surrogate, reset, charge, threshold,
                                                           keep, v0, dims, affine, grads,
                                                           potentials)
                  : backwardPlanes<Surr, Reset, Charge, F>(surrogate, reset, charge, threshold,
                                                           keep, v0, dims, affine, grads,
                                                           potentials);
    };
    // Only PLIF's dL/dk reads the affine in the BPTT loop; H's recomputation
    // (PotentialsRecompute) picks the forward's rounding from affine.fma itself.
    bool fma = affine.fma && std::decay_t<decltype(charge)>::kLearnsK;
    fma ? run(std::true_type{}) : run(std::false_type{});
  });
  double kd = double(k); // dk/dw of k = sigmoid(w)
  return gradK * (kd * (1.0 - kd));
}

} // namespace SNN_BLOCK_ISA

} // namespace snn::runtime
