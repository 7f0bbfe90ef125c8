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
// SpikingJelly's operation order. kTabulated: whether the BPTT loop takes the
// values of a whole step from fill() (one vectorisable loop per kind) rather
// than calling the functor per element.
template <typename T> struct SigmoidGrad {
  static constexpr bool kTabulated = false;
  T alpha;
  T operator()(T x) const {
    T s = T(1) / (T(1) + expApprox(-(x * alpha)));
    return (T(1) - s) * s * alpha;
  }
};
template <typename T> struct ATanGrad {
  static constexpr bool kTabulated = false;
  T halfAlpha, scale; // alpha / 2, pi / 2 * alpha
  T operator()(T x) const {
    T u = scale * x;
    return halfAlpha / (T(1) + u * u);
  }
};

/// The other surrogates' dS/dx, one function per kind (a: alpha, b: beta).
template <typename T> struct SurrogateMath {
  static T sigmoid(T x, T a, T) { return SigmoidGrad<T>{a}(x); }
  static T atan(T x, T a, T) { return ATanGrad<T>{a / T(2), T(M_PI / 2.0) * a}(x); }
  static T piecewiseQuadratic(T x, T a, T) {
    T ax = std::abs(x);
    return ax > T(1) / a ? T(0) : -(a * a) * ax + a;
  }
  static T piecewiseExp(T x, T a, T) { return a / T(2) * expApprox(-a * std::abs(x)); }
  static T softSign(T x, T a, T) {
    T d = T(1) / a + std::abs(x);
    return T(1) / (T(2) * a * (d * d));
  }
  static T superSpike(T x, T a, T) {
    T d = std::abs(x) + T(1);
    return a / (d * d);
  }
  static T nonzeroSignLogAbs(T x, T a, T) { return T(1) / (T(1) / a + std::abs(x)); }
  static T erf(T x, T a, T) {
    T u = x * a;
    return expApprox(-(u * u)) * (a / T(1.7724538509055160273)); // sqrt(pi)
  }
  static T piecewiseLeakyReLU(T x, T w, T c) {
    return std::abs(x) < w ? T(1) / (T(2) * w) : c;
  }
  static T squarewaveFourierSeries(T x, T n, T period) {
    T w = T(M_PI * 2.0) / period, sum = T(0);
    for (int i = 1; i < int(n); ++i)
      sum += std::cos((T(2 * i) - T(1)) * w * x);
    return sum * (T(4) / period);
  }
  static T s2nn(T x, T a, T b) {
    if (x < T(0)) {
      T s = T(1) / (T(1) + expApprox(-(a * x)));
      return a * s * (T(1) - s);
    }
    return b / (x + T(1));
  }
  static T qPseudoSpike(T x, T a, T) {
    return std::pow(T(1) + T(2) / (a - T(1)) * std::abs(x), -a);
  }
  static T leakyKReLU(T x, T leak, T k) { return x >= T(0) ? k : leak; }
  static T fakeNumericalGradient(T x, T a, T) {
    return std::min((x >= T(0) ? T(1) : T(-1)) / x, a);
  }
  static T logTailedReLU(T x, T a, T) {
    return x > T(1) ? T(1) / x : (x <= T(0) ? a : T(1));
  }
  static T rect(T x, T a, T) { return std::abs(x) < T(0.5) / a ? a : T(0); }
};

/// Calls fn(f) with the SurrogateMath function of `kind` as a function object of
/// its own type (not a pointer), so that every kind's loop inlines its math.
template <typename T, typename Fn> inline void visitSurrogateMath(Surrogate kind, Fn &&fn) {
  using M = SurrogateMath<T>;
#define SNN_SURROGATE_CASE(Kind, function)                                                         \
  case Surrogate::Kind:                                                                            \
    return fn([](T x, T a, T b) { return M::function(x, a, b); });
  switch (kind) {
    SNN_SURROGATE_CASE(Sigmoid, sigmoid)
    SNN_SURROGATE_CASE(ATan, atan)
    SNN_SURROGATE_CASE(PiecewiseQuadratic, piecewiseQuadratic)
    SNN_SURROGATE_CASE(PiecewiseExp, piecewiseExp)
    SNN_SURROGATE_CASE(SoftSign, softSign)
    SNN_SURROGATE_CASE(SuperSpike, superSpike)
    SNN_SURROGATE_CASE(NonzeroSignLogAbs, nonzeroSignLogAbs)
    SNN_SURROGATE_CASE(Erf, erf)
    SNN_SURROGATE_CASE(PiecewiseLeakyReLU, piecewiseLeakyReLU)
    SNN_SURROGATE_CASE(SquarewaveFourierSeries, squarewaveFourierSeries)
    SNN_SURROGATE_CASE(S2NN, s2nn)
    SNN_SURROGATE_CASE(QPseudoSpike, qPseudoSpike)
    SNN_SURROGATE_CASE(LeakyKReLU, leakyKReLU)
    SNN_SURROGATE_CASE(FakeNumericalGradient, fakeNumericalGradient)
    SNN_SURROGATE_CASE(LogTailedReLU, logTailedReLU)
    SNN_SURROGATE_CASE(Rect, rect)
  }
#undef SNN_SURROGATE_CASE
}

/// Any surrogate but Sigmoid and ATan: per element through a switch (the
/// spiking blocks' loops), or a step at a time through fill(), whose switch
/// sits outside one loop per kind. Both call the same SurrogateMath function,
/// so they round alike.
template <typename T> struct AnySurrogateGrad {
  static constexpr bool kTabulated = true;
  Surrogate kind;
  T alpha, beta;
  T operator()(T x) const {
    T value = T(0);
    visitSurrogateMath<T>(kind, [&](auto f) { value = f(x, alpha, beta); });
    return value;
  }
  /// out[i] = dS/dx at h[i] - threshold, i < n.
  void fill(const T *__restrict h, T threshold, T *__restrict out, int64_t n) const {
    const T a = alpha, b = beta;
    visitSurrogateMath<T>(kind, [&](auto f) {
      for (int64_t i = 0; i < n; ++i)
        out[i] = f(h[i] - threshold, a, b);
    });
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
  if (config.surrogate == Surrogate::ATan)
    return withCharge(ATanGrad<T>{T(alpha / 2.0), T(M_PI / 2.0 * alpha)});
  withCharge(AnySurrogateGrad<T>{config.surrogate, T(config.alpha), T(config.beta)});
}

} // namespace

} // namespace snn::runtime

#endif // SNN_RUNTIME_KERNELS_NEURONEQUATIONS_H
