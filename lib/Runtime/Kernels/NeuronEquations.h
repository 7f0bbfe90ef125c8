//===- NeuronEquations.h - The neuron model as per-element functors -*- C++ -*-===//
//
// The charge, fire and reset equations of docs/semantics.md and their
// derivatives (surrogates, charge gradients), in SpikingJelly's operation
// order, as small functors that the per-ISA loops inline. Private to the
// runtime's kernels: NeuronKernelsImpl.h (the neuron layer alone) and
// SpikingBlockKernelsImpl.h (BatchNorm, neuron and pooling in one pass) use the
// same functors, so both round alike. Everything is in an anonymous namespace:
// every per-ISA translation unit gets its own copy.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_KERNELS_NEURONEQUATIONS_H
#define SNN_RUNTIME_KERNELS_NEURONEQUATIONS_H

#include "snn/Runtime/Kernels/NeuronKernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace snn::runtime {

namespace {

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

//===----------------------------------------------------------------------===//
// From a NeuronConfig to the functors
//===----------------------------------------------------------------------===//

/// Calls fn(charge, reset, vInit) with the functors of `config` (`k` is
/// PLIF's decay). Soft reset charges with v_reset = 0 and starts at 0.
template <typename T, typename Fn>
void visitForwardEquations(const NeuronConfig &config, T k, Fn &&fn) {
  T vReset = config.hardReset ? T(config.vReset) : T(0);
  auto withCharge = [&](const auto &charge) {
    if (config.hardReset)
      fn(charge, HardReset<T>{vReset}, vReset);
    else
      fn(charge, SoftReset<T>{T(config.vThreshold)}, T(0));
  };
  T tau = T(config.tau);
  switch (config.kind) {
  case NeuronKind::IF:
    return withCharge(IFCharge<T>{});
  case NeuronKind::LIF:
    if (config.decayInput)
      return withCharge(LIFDecayInputCharge<T>{vReset, tau});
    return withCharge(LIFCharge<T>{vReset, tau});
  case NeuronKind::PLIF:
    if (config.decayInput)
      return withCharge(PLIFDecayInputCharge<T>{vReset, k});
    return withCharge(PLIFCharge<T>{vReset, k});
  }
}

/// Calls fn(surrogate, reset, chargeGrad, vInit) with the backward functors
/// of `config`.
template <typename T, typename Fn>
void visitBackwardEquations(const NeuronConfig &config, T k, Fn &&fn) {
  T vReset = config.hardReset ? T(config.vReset) : T(0);
  auto withReset = [&](const auto &surrogate, const auto &charge) {
    if (config.hardReset)
      fn(surrogate, HardReset<T>{vReset}, charge, vReset);
    else
      fn(surrogate, SoftReset<T>{T(config.vThreshold)}, charge, T(0));
  };
  auto withCharge = [&](const auto &surrogate) {
    switch (config.kind) {
    case NeuronKind::IF:
      return withReset(surrogate, LinearChargeGrad<T>{T(1), T(1)});
    case NeuronKind::LIF: {
      T inverseTau = T(1) / T(config.tau);
      return withReset(surrogate,
                       LinearChargeGrad<T>{config.decayInput ? inverseTau : T(1),
                                           T(1) - inverseTau});
    }
    case NeuronKind::PLIF:
      if (config.decayInput)
        return withReset(surrogate,
                         PLIFDecayInputChargeGrad<T>{k, T(1) - k, vReset});
      return withReset(surrogate, PLIFChargeGrad<T>{T(1), T(1) - k, vReset});
    }
  };
  if (config.surrogate == Surrogate::Sigmoid)
    return withCharge(SigmoidGrad<T>{T(config.alpha)});
  double alpha = config.alpha;
  withCharge(ATanGrad<T>{T(alpha / 2.0), T(M_PI / 2.0 * alpha)});
}

} // namespace

} // namespace snn::runtime

#endif // SNN_RUNTIME_KERNELS_NEURONEQUATIONS_H
