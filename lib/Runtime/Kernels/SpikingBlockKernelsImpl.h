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

#include <ATen/Parallel.h>

#include <type_traits>
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

/// One step of one plane: BatchNorm affine, charge, fire, reset.
template <typename Charge, typename Reset, bool Fma, bool SaveH>
SNN_BLOCK_FMA_TARGET void forwardPlaneStep(const Charge &charge, const Reset &reset,
                                       float threshold, float scale, float shift,
                                       const float *__restrict x, float *__restrict v,
                                       float *__restrict spikes, float *__restrict h,
                                       int64_t n) {
  const Charge ch = charge;
  const Reset rs = reset;
  for (int64_t i = 0; i < n; ++i) {
    float hi = ch(v[i], affineOf<Fma>(x[i], scale, shift));
    float s = fire(hi, threshold);
    spikes[i] = s;
    if constexpr (SaveH)
      h[i] = hi;
    v[i] = rs(hi, s);
  }
}

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

template <typename Charge, typename Reset, bool Fma, bool SaveH>
void forwardPlanes(const Charge &charge, const Reset &reset, float threshold, float vInit,
                   const BlockDims &dims, const BlockAffine &affine, const float *x,
                   float *output, float *h, uint8_t *argmax) {
  const int64_t image = dims.image(), outImage = dims.outImage();
  at::parallel_for(0, dims.planes, planesPerTask(dims), [&](int64_t begin, int64_t end) {
    std::vector<float> v(static_cast<size_t>(image)),
        spikes(dims.pooled ? static_cast<size_t>(image + 2 * outImage) : 0);
    for (int64_t p = begin; p < end; ++p) {
      int64_t c = p % dims.channels;
      std::fill(v.begin(), v.end(), vInit);
      for (int64_t t = 0; t < dims.steps; ++t) {
        int64_t plane = t * dims.planes + p;
        float *out = output + plane * outImage;
        float *s = dims.pooled ? spikes.data() : out;
        forwardPlaneStep<Charge, Reset, Fma, SaveH>(
            charge, reset, threshold, affine.scale[c], affine.shift[c],
            x + t * dims.inputStepStride + p * image,
            v.data(), s, SaveH ? h + plane * image : nullptr, image);
        if (dims.pooled)
          poolPlane(s, dims, out, argmax ? argmax + plane * outImage : nullptr, s + image,
                    s + image + outImage);
      }
    }
  });
}

/// dL/dspikes of one plane from dL/dpooled: added to +0 at each window's
/// argmax in output order, as ATen's max-pool backward does.
void unpoolPlane(const float *gradOut, const uint8_t *argmax, const BlockDims &dims,
                 float *grad) {
  std::fill(grad, grad + dims.image(), 0.0f);
  const MaxPoolWindow &w = dims.pool;
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

/// BPTT of one step of one plane (NeuronKernelsImpl.h's Bptt::step, the
/// same expressions), plus PLIF's dL/dk per element.
/// `First`: step 0, whose previous potential is the initial one. Every
/// array is a restrict parameter: GCC honours restrict on parameters only,
/// and otherwise versions the loop on aliasing checks.
template <typename Surr, typename Reset, typename ChargeGrad, bool Fma, bool First>
SNN_BLOCK_TARGET void
backwardPlaneStep(const Surr sg, const Reset rs, const ChargeGrad cg, float threshold,
                  float keep, float vInit, float scale, float shift,
                  const float *__restrict h, const float *__restrict hPrev,
                  const float *__restrict gs, const float *__restrict x,
                  float *__restrict gv, float *__restrict accK, float *__restrict gx,
                  int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float ht = h[i];
    float s = fire(ht, threshold);
    float g = gv[i];
    float dh = (gs[i] + g * rs.dVdS(ht) * keep) * sg(ht - threshold) + g * rs.dVdH(s);
    float gy = dh * cg.dX;
    gv[i] = dh * cg.dV;
    if constexpr (ChargeGrad::kLearnsK) {
      float vPrev = vInit;
      if constexpr (!First)
        vPrev = rs(hPrev[i], fire(hPrev[i], threshold));
      accK[i] += dh * cg.dK(affineOf<Fma>(x[i], scale, shift), vPrev);
    }
    gx[i] = gy;
  }
}

/// backwardPlaneStep with the step's arrays from `a`.
template <typename Surr, typename Reset, typename ChargeGrad, bool Fma, bool First>
void backwardPlaneStepOf(const Surr &sg, const Reset &rs, const ChargeGrad &cg, float threshold,
                         float keep, float vInit, const PlaneStep &a, int64_t n) {
  backwardPlaneStep<Surr, Reset, ChargeGrad, Fma, First>(sg, rs, cg, threshold, keep, vInit,
                                                         a.scale, a.shift, a.h, a.hPrev,
                                                         a.gradSpikes, a.x, a.gv, a.accK,
                                                         a.gradInput, n);
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

template <typename Surr, typename Reset, typename ChargeGrad, bool Fma>
double backwardPlanes(const Surr &surrogate, const Reset &reset, const ChargeGrad &charge,
                      float threshold, float keep, float vInit, const BlockDims &dims,
                      const BlockAffine &affine, const BlockGradients &grads) {
  const int64_t image = dims.image(), outImage = dims.outImage();
  std::vector<double> planeK(size_t(ChargeGrad::kLearnsK ? dims.planes : 0));
  at::parallel_for(0, dims.planes, planesPerTask(dims), [&](int64_t begin, int64_t end) {
    std::vector<float> gv(static_cast<size_t>(image)), acc(static_cast<size_t>(image)),
        unpooled(dims.pooled ? static_cast<size_t>(image) : 0);
    for (int64_t p = begin; p < end; ++p) {
      int64_t c = p % dims.channels;
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
                       grads.h + plane * image,
                       t > 0 ? grads.h + (plane - dims.planes) * image : nullptr,
                       grads.x ? grads.x + t * dims.inputStepStride + p * image : nullptr,
                       affine.scale[c],
                       affine.shift[c],
                       gv.data(),
                       acc.data(),
                       grads.gradInput + plane * image};
        if (t > 0)
          backwardPlaneStepOf<Surr, Reset, ChargeGrad, Fma, false>(
              surrogate, reset, charge, threshold, keep, vInit, step, image);
        else
          backwardPlaneStepOf<Surr, Reset, ChargeGrad, Fma, true>(
              surrogate, reset, charge, threshold, keep, vInit, step, image);
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

} // namespace

namespace SNN_BLOCK_ISA {

void blockForward(const NeuronConfig &config, float k, const BlockDims &dims,
                  const BlockAffine &affine, const float *x, float *output, float *h,
                  uint8_t *argmax) {
  float threshold = config.vThreshold;
  visitForwardEquations<float>(config, k, [&](const auto &charge, const auto &reset, float v0) {
    using Charge = std::decay_t<decltype(charge)>;
    using Reset = std::decay_t<decltype(reset)>;
    auto run = [&](auto fma, auto saveH) {
      forwardPlanes<Charge, Reset, decltype(fma)::value, decltype(saveH)::value>(
          charge, reset, threshold, v0, dims, affine, x, output, h, argmax);
    };
    if (affine.fma)
      h ? run(std::true_type{}, std::true_type{}) : run(std::true_type{}, std::false_type{});
    else
      h ? run(std::false_type{}, std::true_type{}) : run(std::false_type{}, std::false_type{});
  });
}

double blockBackward(const NeuronConfig &config, float k, const BlockDims &dims,
                     const BlockAffine &affine, const BlockGradients &grads) {
  float threshold = config.vThreshold, keep = config.detachReset ? 0.0f : 1.0f;
  double gradK = 0.0;
  visitBackwardEquations<float>(config, k, [&](const auto &surrogate, const auto &reset,
                                               const auto &charge, float v0) {
    auto run = [&](auto fma) {
      gradK = backwardPlanes<std::decay_t<decltype(surrogate)>, std::decay_t<decltype(reset)>,
                             std::decay_t<decltype(charge)>, decltype(fma)::value>(
          surrogate, reset, charge, threshold, keep, v0, dims, affine, grads);
    };
    // Only PLIF's dL/dk reads the affine again.
    bool fma = affine.fma && std::decay_t<decltype(charge)>::kLearnsK;
    fma ? run(std::true_type{}) : run(std::false_type{});
  });
  double kd = double(k); // dk/dw of k = sigmoid(w)
  return gradK * (kd * (1.0 - kd));
}

} // namespace SNN_BLOCK_ISA

} // namespace snn::runtime
