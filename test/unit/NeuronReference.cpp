//===- NeuronReference.cpp - Independent neuron implementations -----------===//
//
// Built with -ffp-contract=off like the kernels, so both round every step.
//
//===----------------------------------------------------------------------===//

#include "NeuronReference.h"

#include <ATen/ATen.h>

namespace snn::test {

using runtime::NeuronConfig;
using runtime::NeuronKind;

static float scalarCharge(const NeuronConfig &c, float k, float v, float x) {
  float vr = c.hardReset ? c.vReset : 0.0f;
  switch (c.kind) {
  case NeuronKind::IF:
    return v + x;
  case NeuronKind::LIF:
    return c.decayInput ? v + (x - (v - vr)) / c.tau : v - (v - vr) / c.tau + x;
  case NeuronKind::PLIF:
    return c.decayInput ? v + (x - (v - vr)) * k : v - (v - vr) * k + x;
  }
  return 0.0f;
}

std::vector<float> scalarNeuron(const NeuronConfig &c, float k,
                                const std::vector<float> &x, int64_t steps,
                                int64_t neurons, std::vector<float> *h) {
  std::vector<float> v(size_t(neurons), c.hardReset ? c.vReset : 0.0f);
  std::vector<float> spikes(x.size());
  if (h)
    h->assign(x.size(), 0.0f);
  for (int64_t t = 0; t < steps; ++t) {
    for (int64_t i = 0; i < neurons; ++i) {
      size_t at = size_t(t * neurons + i);
      float charged = scalarCharge(c, k, v[size_t(i)], x[at]);
      float s = charged - c.vThreshold >= 0.0f ? 1.0f : 0.0f;
      spikes[at] = s;
      if (h)
        (*h)[at] = charged;
      v[size_t(i)] = c.hardReset ? s * c.vReset + (1.0f - s) * charged
                                 : charged - s * c.vThreshold;
    }
  }
  return spikes;
}

/// SpikingJelly's neuronal_charge for one step, as tensor ops.
static at::Tensor atenCharge(const NeuronConfig &c, const at::Tensor &v,
                             const at::Tensor &x, const at::Tensor &w) {
  switch (c.kind) {
  case NeuronKind::IF:
    return v + x;
  case NeuronKind::LIF:
    if (!c.hardReset)
      return c.decayInput ? v + (x - v) / c.tau : v - v / c.tau + x;
    return c.decayInput ? v + (x - (v - c.vReset)) / c.tau
                        : v - (v - c.vReset) / c.tau + x;
  case NeuronKind::PLIF: {
    at::Tensor k = w.sigmoid();
    if (!c.hardReset)
      return c.decayInput ? v + (x - v) * k : v - v * k + x;
    return c.decayInput ? v + (x - (v - c.vReset)) * k
                        : v - (v - c.vReset) * k + x;
  }
  }
  return {};
}

at::Tensor atenNeuron(const at::Tensor &x, const NeuronConfig &c,
                      const at::Tensor &w, at::Tensor *hOut) {
  at::Tensor v = at::full_like(x[0], c.hardReset ? c.vReset : 0.0f);
  std::vector<at::Tensor> spikes, potentials;
  for (int64_t t = 0; t < x.size(0); ++t) {
    at::Tensor h = atenCharge(c, v, x[t], w);
    at::Tensor s = (h - c.vThreshold >= 0).to(at::kFloat);
    v = c.hardReset ? c.vReset * s + (1.0 - s) * h : h - s * c.vThreshold;
    spikes.push_back(s);
    potentials.push_back(h);
  }
  if (hOut)
    *hOut = at::stack(potentials);
  return at::stack(spikes);
}

std::vector<NeuronConfig> allNeuronConfigs() {
  std::vector<NeuronConfig> configs;
  for (NeuronKind kind : {NeuronKind::IF, NeuronKind::LIF, NeuronKind::PLIF})
    for (bool decayInput : {true, false}) {
      if (kind == NeuronKind::IF && !decayInput)
        continue;
      for (bool hardReset : {true, false}) {
        NeuronConfig config;
        config.kind = kind;
        config.decayInput = decayInput;
        config.hardReset = hardReset;
        config.vThreshold = 0.7f;
        config.vReset = hardReset ? -0.1f : 0.0f;
        config.tau = 1.7f;
        configs.push_back(config);
      }
    }
  return configs;
}

std::string describe(const NeuronConfig &c) {
  const char *kinds[] = {"IF", "LIF", "PLIF"};
  return std::string(kinds[int(c.kind)]) +
         (c.decayInput ? "_decay" : "_nodecay") +
         (c.hardReset ? "_hard" : "_soft");
}

} // namespace snn::test
