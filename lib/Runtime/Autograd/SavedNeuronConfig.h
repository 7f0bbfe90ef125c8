//===- SavedNeuronConfig.h - A NeuronConfig in an autograd context -*- C++ -*-===//
//
// Private to the runtime's autograd Functions: the neuron's configuration
// travels from forward to backward in the context's IValue map (the
// Function's node is the only per-call storage autograd gives us).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_AUTOGRAD_SAVEDNEURONCONFIG_H
#define SNN_RUNTIME_AUTOGRAD_SAVEDNEURONCONFIG_H

#include "snn/Runtime/Kernels/NeuronKernels.h"

#include <torch/csrc/autograd/custom_function.h>

namespace snn::runtime {

/// Stores `config` and PLIF's decay `k` in ctx->saved_data.
inline void saveConfig(torch::autograd::AutogradContext *ctx, const NeuronConfig &config,
                       double k) {
  auto &data = ctx->saved_data;
  data["kind"] = int64_t(config.kind);
  data["v_threshold"] = double(config.vThreshold);
  data["hard_reset"] = config.hardReset;
  data["v_reset"] = double(config.vReset);
  data["tau"] = double(config.tau);
  data["decay_input"] = config.decayInput;
  data["detach_reset"] = config.detachReset;
  data["surrogate"] = int64_t(config.surrogate);
  data["alpha"] = double(config.alpha);
  data["beta"] = double(config.beta);
  data["k"] = k;
}

/// The config saveConfig stored (its k: ctx->saved_data["k"]).
inline NeuronConfig loadConfig(torch::autograd::AutogradContext *ctx) {
  auto &data = ctx->saved_data;
  NeuronConfig config;
  config.kind = NeuronKind(data["kind"].toInt());
  config.vThreshold = float(data["v_threshold"].toDouble());
  config.hardReset = data["hard_reset"].toBool();
  config.vReset = float(data["v_reset"].toDouble());
  config.tau = float(data["tau"].toDouble());
  config.decayInput = data["decay_input"].toBool();
  config.detachReset = data["detach_reset"].toBool();
  config.surrogate = Surrogate(data["surrogate"].toInt());
  config.alpha = float(data["alpha"].toDouble());
  config.beta = float(data["beta"].toDouble());
  return config;
}

} // namespace snn::runtime

#endif // SNN_RUNTIME_AUTOGRAD_SAVEDNEURONCONFIG_H
