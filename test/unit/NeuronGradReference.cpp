//===- NeuronGradReference.cpp - Independent references for neuron BPTT ---===//

#include "NeuronGradReference.h"

#include "snn/Schema/Surrogates.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>

#include <cmath>

namespace snn::test {

using runtime::NeuronConfig;
using runtime::NeuronKind;
using runtime::Surrogate;

namespace {

/// SpikingJelly's neuronal_charge for one step, as tensor ops.
at::Tensor atenCharge(const NeuronConfig &c, const at::Tensor &v,
                      const at::Tensor &x, const at::Tensor &w) {
  double vr = c.hardReset ? c.vReset : 0.0;
  switch (c.kind) {
  case NeuronKind::IF:
    return v + x;
  case NeuronKind::LIF:
    return c.decayInput ? v + (x - (v - vr)) / c.tau : v - (v - vr) / c.tau + x;
  case NeuronKind::PLIF: {
    at::Tensor k = w.sigmoid();
    return c.decayInput ? v + (x - (v - vr)) * k : v - (v - vr) * k + x;
  }
  }
  return {};
}

/// dS/du of the surrogates without their own primitive below, as ATen ops
/// (SpikingJelly's formulas, activation_based/surrogate.py).
at::Tensor surrogateDerivative(const NeuronConfig &c, const at::Tensor &u) {
  double a = c.alpha, b = c.beta;
  at::Tensor au = u.abs();
  switch (c.surrogate) {
  case Surrogate::Sigmoid:
  case Surrogate::ATan:
    break;
  case Surrogate::PiecewiseQuadratic:
    return (-(a * a) * au + a).masked_fill(au > 1 / a, 0);
  case Surrogate::PiecewiseExp:
    return a / 2 * (-a * au).exp();
  case Surrogate::SoftSign:
    return 1.0 / (2 * a * (1 / a + au).pow(2));
  case Surrogate::SuperSpike:
    return a / (au + 1.0).pow(2);
  case Surrogate::NonzeroSignLogAbs:
    return 1.0 / (1 / a + au);
  case Surrogate::Erf:
    return (-(u * a).pow(2)).exp() * (a / std::sqrt(M_PI));
  case Surrogate::PiecewiseLeakyReLU:
    return at::where(au < a, at::full_like(u, 1 / (2 * a)), at::full_like(u, b));
  case Surrogate::SquarewaveFourierSeries: {
    at::Tensor sum = at::zeros_like(u);
    for (int i = 1; i < int(a); ++i)
      sum = sum + ((2 * i - 1.0) * (2 * M_PI / b) * u).cos();
    return sum * (4.0 / b);
  }
  case Surrogate::S2NN: {
    at::Tensor sg = (a * u).sigmoid();
    return at::where(u < 0, a * sg * (1 - sg), b / (u + 1.0));
  }
  case Surrogate::QPseudoSpike:
    return (1 + 2 / (a - 1) * au).pow(-a);
  case Surrogate::LeakyKReLU:
    return at::where(u >= 0, at::full_like(u, b), at::full_like(u, a));
  case Surrogate::FakeNumericalGradient:
    return at::clamp_max(at::where(u >= 0, 1.0, -1.0).to(u.scalar_type()) / u, a);
  case Surrogate::LogTailedReLU:
    return at::where(u > 1, 1.0 / u, at::where(u <= 0, at::full_like(u, a), at::ones_like(u)));
  case Surrogate::Rect:
    return a * (au < 0.5 / a).to(u.scalar_type());
  }
  return at::Tensor();
}

/// Heaviside forward, surrogateDerivative backward.
struct SurrogateSpike : torch::autograd::Function<SurrogateSpike> {
  static at::Tensor forward(torch::autograd::AutogradContext *ctx, const at::Tensor &u,
                            int64_t kind, double alpha, double beta) {
    ctx->save_for_backward({u});
    ctx->saved_data["kind"] = kind;
    ctx->saved_data["alpha"] = alpha;
    ctx->saved_data["beta"] = beta;
    return (u >= 0).to(u.scalar_type());
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                 torch::autograd::variable_list grads) {
    NeuronConfig c;
    c.surrogate = Surrogate(ctx->saved_data["kind"].toInt());
    c.alpha = float(ctx->saved_data["alpha"].toDouble());
    c.beta = float(ctx->saved_data["beta"].toDouble());
    at::Tensor u = ctx->get_saved_variables()[0];
    return {grads[0] * surrogateDerivative(c, u), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

/// Heaviside forward, surrogate backward: the primitive's delta is exactly
/// 0 in the forward and carries P' = sg' in the backward (Sigmoid and ATan);
/// the others through SurrogateSpike.
at::Tensor straightThrough(const at::Tensor &u, const NeuronConfig &c) {
  if (c.surrogate != Surrogate::Sigmoid && c.surrogate != Surrogate::ATan)
    return SurrogateSpike::apply(u, int64_t(c.surrogate), double(c.alpha), double(c.beta));
  at::Tensor heaviside = (u >= 0).to(u.scalar_type());
  at::Tensor primitive = c.surrogate == Surrogate::Sigmoid
                             ? (u * c.alpha).sigmoid()
                             : (u * (M_PI / 2 * c.alpha)).atan() / M_PI + 0.5;
  return heaviside + (primitive - primitive.detach());
}

/// An odd function's value at u from its value f on u >= 0.
template <typename F> double odd(double u, F f) { return u >= 0 ? f(u) : -f(-u); }

/// P with P' = the surrogate's dS/du (up to a constant).
double primitive(const NeuronConfig &c, double u) {
  double a = c.alpha, b = c.beta, au = std::abs(u);
  switch (c.surrogate) {
  case Surrogate::Sigmoid:
    return 1.0 / (1.0 + std::exp(-a * u));
  case Surrogate::ATan:
    return std::atan(M_PI / 2 * a * u) / M_PI + 0.5;
  case Surrogate::PiecewiseQuadratic:
    return odd(u, [&](double x) { return x > 1 / a ? 0.5 : -a * a / 2 * x * x + a * x; });
  case Surrogate::PiecewiseExp:
    return odd(u, [&](double x) { return 0.5 - std::exp(-a * x) / 2; });
  case Surrogate::SoftSign:
    return odd(u, [&](double x) { return a * x / (1 + a * x) / 2; });
  case Surrogate::SuperSpike:
    return a * u / (1 + au);
  case Surrogate::NonzeroSignLogAbs:
    return odd(u, [&](double x) { return std::log(a * x + 1); });
  case Surrogate::Erf:
    return std::erfc(-a * u) / 2;
  case Surrogate::PiecewiseLeakyReLU:
    return odd(u, [&](double x) { return x < a ? x / (2 * a) : 0.5 + b * (x - a); });
  case Surrogate::SquarewaveFourierSeries: {
    double sum = 0, w = 2 * M_PI / b;
    for (int i = 1; i < int(a); ++i)
      sum += std::sin((2 * i - 1.0) * w * u) / (2 * i - 1.0);
    return 2 / M_PI * sum;
  }
  case Surrogate::S2NN:
    return u < 0 ? 1 / (1 + std::exp(-a * u)) : b * std::log(u + 1) + 0.5;
  case Surrogate::QPseudoSpike:
    return odd(u, [&](double x) { return 0.5 - 0.5 * std::pow(1 + 2 / (a - 1) * x, 1 - a); });
  case Surrogate::LeakyKReLU:
    return u >= 0 ? b * u : a * u;
  case Surrogate::FakeNumericalGradient:
    return odd(u, [&](double x) { return x <= 1 / a ? a * x : 1 + std::log(a * x); });
  case Surrogate::LogTailedReLU:
    return u <= 0 ? a * u : (u <= 1 ? u : 1 + std::log(u));
  case Surrogate::Rect:
    return std::clamp(a * u + 0.5, 0.0, 1.0);
  }
  return 0.0;
}

} // namespace

at::Tensor atenSurrogateNeuron(const at::Tensor &x, const NeuronConfig &c,
                               const at::Tensor &w) {
  at::Tensor v = at::full_like(x[0], c.hardReset ? c.vReset : 0.0f);
  std::vector<at::Tensor> spikes;
  bool perStep = w.defined() && w.dim() == x.dim() && w.dim() > 0;
  for (int64_t t = 0; t < x.size(0); ++t) {
    at::Tensor h = atenCharge(c, v, x[t], perStep ? w[t] : w);
    at::Tensor s = straightThrough(h - c.vThreshold, c);
    at::Tensor r = c.detachReset ? s.detach() : s;
    v = c.hardReset ? c.vReset * r + (1.0 - r) * h : h - r * c.vThreshold;
    spikes.push_back(s);
  }
  return at::stack(spikes);
}

LinearisedNeuron::LinearisedNeuron(const NeuronConfig &config,
                                   const std::vector<double> &x0, double w0,
                                   int64_t steps, int64_t neurons)
    : config(config), steps(steps), neurons(neurons), heaviside0(x0.size()),
      primitive0(x0.size()) {
  run(x0, w0, nullptr, /*record=*/true);
}

double LinearisedNeuron::loss(const std::vector<double> &x, double w,
                              const std::vector<double> &g) {
  return run(x, w, &g, /*record=*/false);
}

double LinearisedNeuron::charge(double v, double x, double k) const {
  const NeuronConfig &c = config;
  double vr = c.hardReset ? c.vReset : 0.0;
  double tau = c.tau;
  switch (c.kind) {
  case NeuronKind::IF:
    return v + x;
  case NeuronKind::LIF:
    return c.decayInput ? v + (x - (v - vr)) / tau : v - (v - vr) / tau + x;
  case NeuronKind::PLIF:
    return c.decayInput ? v + (x - (v - vr)) * k : v - (v - vr) * k + x;
  }
  return 0.0;
}

double LinearisedNeuron::run(const std::vector<double> &x, double w,
                             const std::vector<double> *g, bool record) {
  const NeuronConfig &c = config;
  double k = 1.0 / (1.0 + std::exp(-w));
  double vr = c.vReset, thr = c.vThreshold;
  std::vector<double> v(size_t(neurons), c.hardReset ? vr : 0.0);
  double total = 0.0;
  for (int64_t t = 0; t < steps; ++t)
    for (int64_t i = 0; i < neurons; ++i) {
      size_t at = size_t(t * neurons + i);
      double h = charge(v[size_t(i)], x[at], k);
      double u = h - thr;
      if (record) {
        heaviside0[at] = u >= 0.0 ? 1.0 : 0.0;
        primitive0[at] = primitive(c, u);
      }
      double s = heaviside0[at] + primitive(c, u) - primitive0[at];
      double r = c.detachReset ? heaviside0[at] : s;
      v[size_t(i)] = c.hardReset ? r * vr + (1.0 - r) * h : h - r * thr;
      if (g)
        total += (*g)[at] * s;
    }
  return total;
}

std::vector<NeuronConfig> allGradConfigs() {
  std::vector<NeuronConfig> configs;
  for (NeuronKind kind : {NeuronKind::IF, NeuronKind::LIF, NeuronKind::PLIF})
    for (bool decayInput : {true, false}) {
      if (kind == NeuronKind::IF && !decayInput)
        continue;
      for (bool hardReset : {true, false})
        for (bool detachReset : {false, true})
          for (Surrogate surrogate : {Surrogate::Sigmoid, Surrogate::ATan}) {
            NeuronConfig config;
            config.kind = kind;
            config.decayInput = decayInput;
            config.hardReset = hardReset;
            config.detachReset = detachReset;
            config.surrogate = surrogate;
            // Non-default values, so a dropped parameter shows.
            config.alpha = surrogate == Surrogate::Sigmoid ? 3.0f : 1.5f;
            config.vThreshold = 0.7f;
            config.vReset = hardReset ? -0.1f : 0.0f;
            config.tau = 1.7f;
            configs.push_back(config);
          }
    }
  return configs;
}

std::vector<NeuronConfig> surrogateGradConfigs() {
  // Per surrogate, parameters other than SpikingJelly's defaults, each
  // shaping the gradient over the potentials' range here (x = H - 0.7 in
  // about [-2, 2]).
  struct Parameters {
    Surrogate kind;
    float alpha, beta;
  };
  const Parameters all[] = {
      {Surrogate::PiecewiseQuadratic, 0.9f, 0.0f},
      {Surrogate::PiecewiseExp, 1.5f, 0.0f},
      {Surrogate::SoftSign, 1.5f, 0.0f},
      {Surrogate::SuperSpike, 1.5f, 0.0f},
      {Surrogate::NonzeroSignLogAbs, 1.5f, 0.0f},
      {Surrogate::Erf, 1.5f, 0.0f},
      {Surrogate::PiecewiseLeakyReLU, 0.8f, 0.05f},
      {Surrogate::SquarewaveFourierSeries, 3.0f, 7.0f},
      {Surrogate::S2NN, 3.0f, 0.8f},
      {Surrogate::QPseudoSpike, 2.5f, 0.0f},
      {Surrogate::LeakyKReLU, 0.1f, 0.9f},
      {Surrogate::FakeNumericalGradient, 0.5f, 0.0f},
      {Surrogate::LogTailedReLU, 0.1f, 0.0f},
      {Surrogate::Rect, 0.8f, 0.0f},
  };
  std::vector<NeuronConfig> configs;
  for (const Parameters &p : all)
    for (bool plif : {false, true}) {
      NeuronConfig config;
      config.kind = plif ? NeuronKind::PLIF : NeuronKind::LIF;
      config.decayInput = !plif;
      config.hardReset = !plif;
      config.detachReset = plif;
      config.surrogate = p.kind;
      config.alpha = p.alpha;
      config.beta = p.beta;
      config.vThreshold = 0.7f;
      config.vReset = plif ? 0.0f : -0.1f;
      config.tau = 1.7f;
      configs.push_back(config);
    }
  return configs;
}

std::string describeGrad(const NeuronConfig &c) {
  const char *kinds[] = {"IF", "LIF", "PLIF"};
  std::string name = kinds[int(c.kind)];
  if (c.kind != NeuronKind::IF)
    name += c.decayInput ? "_decay" : "_nodecay";
  name += c.hardReset ? "_hard" : "_soft";
  name += c.detachReset ? "_detach" : "";
  name += "_" + std::string(schema::surrogateSpecs()[size_t(c.surrogate)].name);
  return name;
}

} // namespace snn::test
