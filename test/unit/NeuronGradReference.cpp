//===- NeuronGradReference.cpp - Independent references for neuron BPTT ---===//

#include "NeuronGradReference.h"

#include <ATen/ATen.h>

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

/// Heaviside forward, surrogate backward: the primitive's delta is exactly
/// 0 in the forward and carries P' = sg' in the backward.
at::Tensor straightThrough(const at::Tensor &u, const NeuronConfig &c) {
  at::Tensor heaviside = (u >= 0).to(u.scalar_type());
  at::Tensor primitive = c.surrogate == Surrogate::Sigmoid
                             ? (u * c.alpha).sigmoid()
                             : (u * (M_PI / 2 * c.alpha)).atan() / M_PI + 0.5;
  return heaviside + (primitive - primitive.detach());
}

/// P with P' = the surrogate's dS/du.
double primitive(const NeuronConfig &c, double u) {
  double alpha = c.alpha;
  if (c.surrogate == Surrogate::Sigmoid)
    return 1.0 / (1.0 + std::exp(-alpha * u));
  return std::atan(M_PI / 2 * alpha * u) / M_PI + 0.5;
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

std::string describeGrad(const NeuronConfig &c) {
  const char *kinds[] = {"IF", "LIF", "PLIF"};
  std::string name = kinds[int(c.kind)];
  if (c.kind != NeuronKind::IF)
    name += c.decayInput ? "_decay" : "_nodecay";
  name += c.hardReset ? "_hard" : "_soft";
  name += c.detachReset ? "_detach" : "";
  name += c.surrogate == Surrogate::Sigmoid ? "_sigmoid" : "_atan";
  return name;
}

} // namespace snn::test
