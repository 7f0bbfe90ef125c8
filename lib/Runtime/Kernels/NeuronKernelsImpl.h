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

#include "NeuronEquations.h"
#include "NeuronKernelsIsa.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <type_traits>
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
// Forward
//===----------------------------------------------------------------------===//

template <typename T> struct Buffers {
  const T *x;
  T *spikes;
  T *h; // null unless SaveH
  int64_t steps;
  int64_t stride; // neurons per step
};

/// Runs all steps for neurons [begin, begin + count) of every step; returns
/// the spikes it wrote, counted per step in an integer the loop keeps in a
/// register (an integer sum vectorises; a float one could not be reordered).
template <typename T, typename Charge, typename Reset, bool SaveH>
SNN_NEURON_TARGET int64_t runTile(const Charge &charge, const Reset &reset,
                               T vThreshold, T vInit, const Buffers<T> &buffers,
                               int64_t begin, int64_t count) {
  T v[kTile];
  std::fill(v, v + count, vInit);
  int64_t fired = 0;
  for (int64_t t = 0; t < buffers.steps; ++t) {
    int64_t offset = t * buffers.stride + begin;
    const T *__restrict x = buffers.x + offset;
    T *__restrict spikes = buffers.spikes + offset;
    T *__restrict hSaved = SaveH ? buffers.h + offset : nullptr;
    int32_t stepFired = 0;
    for (int64_t i = 0; i < count; ++i) {
      T h = charge(v[i], x[i]);
      T s = fire(h, vThreshold);
      spikes[i] = s;
      stepFired += s != T(0);
      if constexpr (SaveH)
        hSaved[i] = h;
      v[i] = reset(h, s);
    }
    fired += stepFired;
  }
  return fired;
}

template <typename T, typename Charge, typename Reset, bool SaveH>
int64_t runAll(const Charge &charge, const Reset &reset, T vThreshold, T vInit,
               const Buffers<T> &buffers) {
  std::atomic<int64_t> fired{0};
  at::parallel_for(0, buffers.stride, chunkNeurons(buffers.steps),
                   [&](int64_t begin, int64_t end) {
                     int64_t chunk = 0;
                     for (int64_t tile = begin; tile < end; tile += kTile)
                       chunk += runTile<T, Charge, Reset, SaveH>(
                           charge, reset, vThreshold, vInit, buffers, tile,
                           std::min(kTile, end - tile));
                     fired += chunk;
                   });
  return fired.load();
}


//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

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
    // A surrogate without its own inlined loop: the step's values first, in
    // one loop per kind that vectorises.
    [[maybe_unused]] T table[Surr::kTabulated ? kTile : 1];
    if constexpr (Surr::kTabulated)
      sg.fill(h, threshold, table, count);
    for (int64_t i = 0; i < count; ++i) {
      T ht = h[i];
      T s = fire(ht, threshold);
      T g = gv[i];
      T d;
      if constexpr (Surr::kTabulated)
        d = table[i];
      else
        d = sg(ht - threshold);
      T dh = (gs[i] + g * rs.dVdS(ht) * keep) * d + g * rs.dVdH(s);
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

template <typename T>
int64_t forwardRaw(const NeuronConfig &config, T k, const T *x, T *spikes, T *h,
                   int64_t steps, int64_t neuronsPerStep) {
  Buffers<T> buffers{x, spikes, h, steps, neuronsPerStep};
  T vth = T(config.vThreshold);
  int64_t fired = 0;
  visitForwardEquations<T>(config, k, [&](const auto &charge, const auto &reset, T v0) {
    using Charge = std::decay_t<decltype(charge)>;
    using Reset = std::decay_t<decltype(reset)>;
    if (buffers.h)
      fired = runAll<T, Charge, Reset, true>(charge, reset, vth, v0, buffers);
    else
      fired = runAll<T, Charge, Reset, false>(charge, reset, vth, v0, buffers);
  });
  return fired;
}

template <typename T>
double backwardRaw(const NeuronConfig &config, T k, const T *gradSpikes,
                   const T *h, const T *x, T *gradX, int64_t steps,
                   int64_t neuronsPerStep) {
  if (config.kind == NeuronKind::PLIF && !x)
    throw Error("PLIF backward needs the forward's input");
  BackwardBuffers<T> buffers{gradSpikes, h, x, gradX, steps, neuronsPerStep};
  double gradK = 0.0;
  visitBackwardEquations<T>(config, k, [&](const auto &surrogate, const auto &reset,
                                           const auto &charge, T vInit) {
    using Bp = Bptt<T, std::decay_t<decltype(surrogate)>, std::decay_t<decltype(reset)>,
                    std::decay_t<decltype(charge)>>;
    Bp bptt{surrogate, reset, charge, T(config.vThreshold), vInit,
            T(config.detachReset ? 0 : 1), buffers};
    gradK = bptt.run();
  });
  // dk/dw of k = sigmoid(w).
  double kd = double(k);
  return gradK * (kd * (1.0 - kd));
}


} // namespace

namespace SNN_NEURON_ISA {

int64_t forward(const NeuronConfig &config, float k, const float *x, float *spikes,
                float *h, int64_t steps, int64_t neuronsPerStep) {
  return forwardRaw<float>(config, k, x, spikes, h, steps, neuronsPerStep);
}

double backward(const NeuronConfig &config, float k, const float *gradSpikes,
                const float *h, const float *x, float *gradX, int64_t steps,
                int64_t neuronsPerStep) {
  return backwardRaw<float>(config, k, gradSpikes, h, x, gradX, steps,
                            neuronsPerStep);
}

} // namespace SNN_NEURON_ISA

} // namespace snn::runtime
