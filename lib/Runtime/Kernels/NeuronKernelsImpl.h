//===- NeuronKernelsImpl.h - Neuron loops, built once per ISA ---*- C++ -*-===//
//
// The fused forward and BPTT loops as templates. This private header is
// included by NeuronKernelsBaseline.cpp (the target's baseline ISA) and
// NeuronKernelsAvx2.cpp (hot loops compiled for AVX2), each with its own
// SNN_NEURON_ISA namespace; NeuronKernels.cpp picks one at run time. The
// templates live in an anonymous namespace so the two builds never share (and
// the linker never mixes) an instantiation. Both TUs are built with
// -ffp-contract=off, so every ISA rounds exactly like the PyTorch reference:
// only the vector width differs.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_NEURON_ISA
#error "define SNN_NEURON_ISA before including NeuronKernelsImpl.h"
#endif

// The hot loops carry the ISA as a function attribute instead of the whole
// file being built with -m flags: inline library code (std::vector, ATen's
// parallel helpers) is then compiled for the baseline only, so the linker
// cannot pick an AVX2 copy of a shared inline function for baseline callers.
#ifndef SNN_NEURON_TARGET
#define SNN_NEURON_TARGET
#endif

#include "NeuronKernelsIsa.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace snn::runtime {

namespace {

/// Neurons per tile: the state arrays (1-2 KiB each) stay in L1.
constexpr int64_t kTile = 256;
/// Element-steps per parallel chunk, so tiny layers do not pay for threads.
constexpr int64_t kMinWorkPerChunk = 1 << 15;

/// Neurons per parallel chunk for a layer of `steps` steps.
int64_t chunkNeurons(int64_t steps) {
  return std::max<int64_t>(kTile,
                           kMinWorkPerChunk / std::max<int64_t>(steps, 1));
}

//===----------------------------------------------------------------------===//
// The model equations
//===----------------------------------------------------------------------===//

// Charges: H from V (before the step) and X. SpikingJelly's expressions.
template <typename T> struct IFCharge {
  T operator()(T v, T x) const { return v + x; }
};
template <typename T> struct LIFDecayInputCharge {
  T vReset, tau;
  T operator()(T v, T x) const { return v + (x - (v - vReset)) / tau; }
};
template <typename T> struct LIFCharge {
  T vReset, tau;
  T operator()(T v, T x) const { return v - (v - vReset) / tau + x; }
};
template <typename T> struct PLIFDecayInputCharge {
  T vReset, k;
  T operator()(T v, T x) const { return v + (x - (v - vReset)) * k; }
};
template <typename T> struct PLIFCharge {
  T vReset, k;
  T operator()(T v, T x) const { return v - (v - vReset) * k + x; }
};

// Resets: V after the step from H and the spike S (0 or 1), and V's partial
// derivatives for the backward.
template <typename T> struct HardReset {
  T vReset;
  T operator()(T h, T s) const { return s * vReset + (T(1) - s) * h; }
  T dVdH(T s) const { return T(1) - s; }
  T dVdS(T h) const { return vReset - h; }
};
template <typename T> struct SoftReset {
  T vThreshold;
  T operator()(T h, T s) const { return h - s * vThreshold; }
  T dVdH(T) const { return T(1); }
  T dVdS(T) const { return -vThreshold; }
};

/// Heaviside(h - threshold) as 0 or 1; a compare and a convert, no branch.
template <typename T> inline T fire(T h, T threshold) {
  return T(h - threshold >= T(0));
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

template <typename T> struct Buffers {
  const T *x;
  T *spikes;
  T *h; // null unless SaveH
  int64_t steps;
  int64_t stride; // neurons per step
};

/// Runs all steps for neurons [begin, begin + count) of every step.
template <typename T, typename Charge, typename Reset, bool SaveH>
SNN_NEURON_TARGET void runTile(const Charge &charge, const Reset &reset,
                               T vThreshold, T vInit, const Buffers<T> &buffers,
                               int64_t begin, int64_t count) {
  T v[kTile];
  std::fill(v, v + count, vInit);
  for (int64_t t = 0; t < buffers.steps; ++t) {
    int64_t offset = t * buffers.stride + begin;
    const T *__restrict x = buffers.x + offset;
    T *__restrict spikes = buffers.spikes + offset;
    T *__restrict hSaved = SaveH ? buffers.h + offset : nullptr;
    for (int64_t i = 0; i < count; ++i) {
      T h = charge(v[i], x[i]);
      T s = fire(h, vThreshold);
      spikes[i] = s;
      if constexpr (SaveH)
        hSaved[i] = h;
      v[i] = reset(h, s);
    }
  }
}

template <typename T, typename Charge, typename Reset, bool SaveH>
void runAll(const Charge &charge, const Reset &reset, T vThreshold, T vInit,
            const Buffers<T> &buffers) {
  at::parallel_for(0, buffers.stride, chunkNeurons(buffers.steps),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t tile = begin; tile < end; tile += kTile)
                       runTile<T, Charge, Reset, SaveH>(
                           charge, reset, vThreshold, vInit, buffers, tile,
                           std::min(kTile, end - tile));
                   });
}

template <typename T, typename Charge>
void dispatchReset(const NeuronConfig &config, const Charge &charge,
                   const Buffers<T> &buffers) {
  // The membrane starts at v_reset, or at 0 for soft reset.
  T vth = T(config.vThreshold);
  if (config.hardReset) {
    HardReset<T> reset{T(config.vReset)};
    T v0 = T(config.vReset);
    if (buffers.h)
      runAll<T, Charge, HardReset<T>, true>(charge, reset, vth, v0, buffers);
    else
      runAll<T, Charge, HardReset<T>, false>(charge, reset, vth, v0, buffers);
  } else {
    SoftReset<T> reset{vth};
    if (buffers.h)
      runAll<T, Charge, SoftReset<T>, true>(charge, reset, vth, T(0), buffers);
    else
      runAll<T, Charge, SoftReset<T>, false>(charge, reset, vth, T(0), buffers);
  }
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

/// exp for the Sigmoid surrogate. std::exp is a library call that GCC does
/// not vectorise without -ffast-math, so float uses a branch-free Cephes-style
/// expf (about 1 ulp): range reduction by n = round(x / ln 2) with the
/// 1.5 * 2^23 rounding trick, a degree-6 polynomial, and 2^n built in the
/// exponent bits. Double (gradient checks only) keeps std::exp.
inline float expApprox(float x) {
  x = std::min(88.0f, std::max(-87.0f, x));
  const float magic = 12582912.0f; // 1.5 * 2^23
  float shifted = x * 1.44269504088896341f + magic;
  float n = shifted - magic;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  float y = p * r * r + r + 1.0f;
  int32_t bits = (int32_t(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return y * scale;
}
inline double expApprox(double x) { return std::exp(x); }

// Surrogates: dS/dx at x = H - v_threshold (docs/semantics.md), in
// SpikingJelly's operation order.
template <typename T> struct SigmoidGrad {
  T alpha;
  T operator()(T x) const {
    T s = T(1) / (T(1) + expApprox(-(x * alpha)));
    return (T(1) - s) * s * alpha;
  }
};
template <typename T> struct ATanGrad {
  T halfAlpha, scale; // alpha / 2, pi / 2 * alpha
  T operator()(T x) const {
    T u = scale * x;
    return halfAlpha / (T(1) + u * u);
  }
};

// Charge derivatives: dH/dX, dH/dV_{t-1}, and for PLIF dH/dk.
template <typename T> struct LinearChargeGrad { // IF and LIF
  static constexpr bool kLearnsK = false;
  T dX, dV;
  T dK(T, T) const { return T(0); }
};
template <typename T> struct PLIFDecayInputChargeGrad {
  static constexpr bool kLearnsK = true;
  T dX, dV, vReset; // k, 1 - k
  T dK(T x, T vPrev) const { return x - (vPrev - vReset); }
};
template <typename T> struct PLIFChargeGrad {
  static constexpr bool kLearnsK = true;
  T dX, dV, vReset; // 1, 1 - k
  T dK(T, T vPrev) const { return -(vPrev - vReset); }
};

template <typename T> struct BackwardBuffers {
  const T *gradSpikes;
  const T *h;
  const T *x; // PLIF only
  T *gradX;
  int64_t steps;
  int64_t stride; // neurons per step
};

/// The BPTT of one configuration. Per step, backwards:
///   dH  = (gS + keep * gV * dV/dS) * sg'(H - thr) + gV * dV/dH
///   gX  = dH * dH/dX,  gV_{t-1} = dH * dH/dV,  dk += dH * dH/dk
/// with keep = 0 under detach_reset; gV of the last step is 0.
template <typename T, typename Surr, typename Reset, typename ChargeGrad>
struct Bptt {
  Surr surrogate;
  Reset reset;
  ChargeGrad charge;
  T vThreshold, vInit, keepReset;
  BackwardBuffers<T> buffers;

  /// Step t for neurons [begin, begin + count); `gv` carries dL/dV, `acc`
  /// dL/dk per neuron. First: t = 0, whose V_{t-1} is the initial value.
  template <bool First>
  SNN_NEURON_TARGET void step(int64_t t, int64_t begin, int64_t count,
                              T *__restrict gv, T *__restrict acc) const {
    int64_t offset = t * buffers.stride + begin;
    const T *__restrict h = buffers.h + offset;
    const T *__restrict gs = buffers.gradSpikes + offset;
    T *__restrict gx = buffers.gradX + offset;
    const T *__restrict hPrev = First ? nullptr : h - buffers.stride;
    const T *__restrict x = ChargeGrad::kLearnsK ? buffers.x + offset : nullptr;
    // Local copies: through `this`, GCC cannot rule out that the gx stores
    // alias the constants and versions or gives up vectorising the loop.
    const Surr sg = surrogate;
    const Reset rs = reset;
    const ChargeGrad cg = charge;
    const T threshold = vThreshold, keep = keepReset, v0 = vInit;
    for (int64_t i = 0; i < count; ++i) {
      T ht = h[i];
      T s = fire(ht, threshold);
      T g = gv[i];
      T dh = (gs[i] + g * rs.dVdS(ht) * keep) * sg(ht - threshold) +
             g * rs.dVdH(s);
      gx[i] = dh * cg.dX;
      gv[i] = dh * cg.dV;
      if constexpr (ChargeGrad::kLearnsK) {
        T vPrev = v0;
        if constexpr (!First)
          vPrev = rs(hPrev[i], fire(hPrev[i], threshold));
        acc[i] += dh * cg.dK(x[i], vPrev);
      }
    }
  }

  /// All steps of one tile; returns the tile's dL/dk.
  SNN_NEURON_TARGET double tile(int64_t begin, int64_t count) const {
    T gv[kTile], acc[kTile];
    std::fill(gv, gv + count, T(0));
    std::fill(acc, acc + count, T(0));
    for (int64_t t = buffers.steps - 1; t >= 1; --t)
      step<false>(t, begin, count, gv, acc);
    if (buffers.steps > 0)
      step<true>(0, begin, count, gv, acc);
    double sum = 0.0;
    if constexpr (ChargeGrad::kLearnsK)
      for (int64_t i = 0; i < count; ++i)
        sum += double(acc[i]);
    return sum;
  }

  /// Parallel over tiles. Each tile's partial dL/dk lands in its own slot
  /// and the slots are summed in tile order: the result is the same for any
  /// thread count.
  double run() const {
    int64_t tiles = (buffers.stride + kTile - 1) / kTile;
    std::vector<double> partial(size_t(ChargeGrad::kLearnsK ? tiles : 0));
    int64_t grain = std::max<int64_t>(1, chunkNeurons(buffers.steps) / kTile);
    at::parallel_for(0, tiles, grain, [&](int64_t first, int64_t last) {
      for (int64_t index = first; index < last; ++index) {
        int64_t begin = index * kTile;
        double sum = tile(begin, std::min(kTile, buffers.stride - begin));
        if constexpr (ChargeGrad::kLearnsK)
          partial[size_t(index)] = sum;
      }
    });
    double total = 0.0;
    for (double value : partial)
      total += value;
    return total;
  }
};

template <typename T, typename Surr, typename Reset, typename ChargeGrad>
double runBptt(const NeuronConfig &config, const Surr &surrogate,
               const Reset &reset, const ChargeGrad &charge,
               const BackwardBuffers<T> &buffers) {
  T vInit = config.hardReset ? T(config.vReset) : T(0);
  Bptt<T, Surr, Reset, ChargeGrad> bptt{
      surrogate, reset,
      charge,    T(config.vThreshold),
      vInit,     T(config.detachReset ? 0 : 1),
      buffers};
  return bptt.run();
}

template <typename T, typename Surr, typename ChargeGrad>
double dispatchBackwardReset(const NeuronConfig &config, const Surr &surrogate,
                             const ChargeGrad &charge,
                             const BackwardBuffers<T> &buffers) {
  if (config.hardReset)
    return runBptt(config, surrogate, HardReset<T>{T(config.vReset)}, charge,
                   buffers);
  return runBptt(config, surrogate, SoftReset<T>{T(config.vThreshold)}, charge,
                 buffers);
}

/// Returns dL/dk for PLIF, 0 otherwise.
template <typename T, typename Surr>
double dispatchBackwardCharge(const NeuronConfig &config, T k,
                              const Surr &surrogate,
                              const BackwardBuffers<T> &buffers) {
  // Soft reset charges with v_reset = 0.
  T vReset = config.hardReset ? T(config.vReset) : T(0);
  switch (config.kind) {
  case NeuronKind::IF:
    return dispatchBackwardReset(config, surrogate,
                                 LinearChargeGrad<T>{T(1), T(1)}, buffers);
  case NeuronKind::LIF: {
    T inverseTau = T(1) / T(config.tau);
    LinearChargeGrad<T> charge{config.decayInput ? inverseTau : T(1),
                               T(1) - inverseTau};
    return dispatchBackwardReset(config, surrogate, charge, buffers);
  }
  case NeuronKind::PLIF:
    if (config.decayInput)
      return dispatchBackwardReset(
          config, surrogate, PLIFDecayInputChargeGrad<T>{k, T(1) - k, vReset},
          buffers);
    return dispatchBackwardReset(
        config, surrogate, PLIFChargeGrad<T>{T(1), T(1) - k, vReset}, buffers);
  }
  return 0.0;
}

template <typename T>
void forwardRaw(const NeuronConfig &config, T k, const T *x, T *spikes, T *h,
                int64_t steps, int64_t neuronsPerStep) {
  Buffers<T> buffers{x, spikes, h, steps, neuronsPerStep};
  // Soft reset charges with v_reset = 0.
  T vReset = config.hardReset ? T(config.vReset) : T(0);
  T tau = T(config.tau);
  switch (config.kind) {
  case NeuronKind::IF:
    return dispatchReset(config, IFCharge<T>{}, buffers);
  case NeuronKind::LIF:
    if (config.decayInput)
      return dispatchReset(config, LIFDecayInputCharge<T>{vReset, tau},
                           buffers);
    return dispatchReset(config, LIFCharge<T>{vReset, tau}, buffers);
  case NeuronKind::PLIF:
    if (config.decayInput)
      return dispatchReset(config, PLIFDecayInputCharge<T>{vReset, k}, buffers);
    return dispatchReset(config, PLIFCharge<T>{vReset, k}, buffers);
  }
}

template <typename T>
double backwardRaw(const NeuronConfig &config, T k, const T *gradSpikes,
                   const T *h, const T *x, T *gradX, int64_t steps,
                   int64_t neuronsPerStep) {
  if (config.kind == NeuronKind::PLIF && !x)
    throw Error("PLIF backward needs the forward's input");
  BackwardBuffers<T> buffers{gradSpikes, h, x, gradX, steps, neuronsPerStep};
  double gradK;
  if (config.surrogate == Surrogate::Sigmoid) {
    gradK = dispatchBackwardCharge(config, k, SigmoidGrad<T>{T(config.alpha)},
                                   buffers);
  } else {
    double alpha = config.alpha;
    ATanGrad<T> surrogate{T(alpha / 2.0), T(M_PI / 2.0 * alpha)};
    gradK = dispatchBackwardCharge(config, k, surrogate, buffers);
  }
  // dk/dw of k = sigmoid(w).
  double kd = double(k);
  return gradK * (kd * (1.0 - kd));
}

} // namespace

namespace SNN_NEURON_ISA {

void forward(const NeuronConfig &config, float k, const float *x, float *spikes,
             float *h, int64_t steps, int64_t neuronsPerStep) {
  forwardRaw<float>(config, k, x, spikes, h, steps, neuronsPerStep);
}

double backward(const NeuronConfig &config, float k, const float *gradSpikes,
                const float *h, const float *x, float *gradX, int64_t steps,
                int64_t neuronsPerStep) {
  return backwardRaw<float>(config, k, gradSpikes, h, x, gradX, steps,
                            neuronsPerStep);
}

} // namespace SNN_NEURON_ISA

} // namespace snn::runtime
