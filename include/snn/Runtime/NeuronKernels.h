//===- NeuronKernels.h - Fused multi-step neuron forward --------*- C++ -*-===//
//
// A neuron layer runs all T steps in one C++ loop instead of a chain of small
// ATen ops per step (what makes eager PyTorch slow). The math follows
// shared/SNN_SEMANTICS.md with PyTorch's float32 operation order, so spikes
// are bit-identical to the PyTorch reference. The forward can save the
// pre-fire potential H of every step: BPTT needs it, and the autograd
// Function that adds the backward calls neuronForward with saveH = true.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_NEURONKERNELS_H
#define SNN_RUNTIME_NEURONKERNELS_H

#include <ATen/core/Tensor.h>
#include <cstdint>

namespace snn::runtime {

enum class NeuronKind { IF, LIF, PLIF };
enum class Surrogate { Sigmoid, ATan };

struct NeuronConfig {
  NeuronKind kind = NeuronKind::IF;
  float vThreshold = 1.0f;
  /// Hard reset to vReset, or soft reset (subtract vThreshold) when false.
  bool hardReset = true;
  float vReset = 0.0f;
  /// LIF only; must be > 1.
  float tau = 2.0f;
  /// LIF and PLIF: whether the leak also scales the input.
  bool decayInput = true;
  // Used by the backward only.
  bool detachReset = false;
  Surrogate surrogate = Surrogate::Sigmoid;
  float alpha = 4.0f;
};

/// The forward on raw memory: `x`, `spikes` and (if not null) `h` hold T*M
/// floats, step-major ([T, M]). `k` is sigmoid(w) for PLIF, ignored
/// otherwise. The membrane starts at vReset (0 for soft reset).
void neuronForwardRaw(const NeuronConfig &config, float k, const float *x,
                      float *spikes, float *h, int64_t steps,
                      int64_t neuronsPerStep);

struct NeuronForwardResult {
  at::Tensor spikes; // same shape as x
  at::Tensor h;      // pre-fire potential per step, or undefined
};

/// Runs the neuron over dim 0 of float32 `x` [T, N, ...].
NeuronForwardResult neuronForward(const at::Tensor &x,
                                  const NeuronConfig &config, float k = 0.0f,
                                  bool saveH = false);

/// PLIF's decay k = sigmoid(w), computed by ATen in float32 exactly as the
/// PyTorch reference does. `w` must hold one element.
float plifDecay(const at::Tensor &w);

} // namespace snn::runtime

#endif // SNN_RUNTIME_NEURONKERNELS_H
