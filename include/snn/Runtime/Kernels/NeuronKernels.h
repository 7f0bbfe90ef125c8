//===- NeuronKernels.h - Fused multi-step neuron forward, BPTT --*- C++ -*-===//
//
// A neuron layer runs all T steps in one C++ loop instead of a chain of small
// ATen ops per step (what makes eager PyTorch slow). The math follows
// docs/semantics.md with PyTorch's float32 operation order, so spikes
// are bit-identical to the PyTorch reference. The forward can save the
// pre-fire potential H of every step; the backward (BPTT with the surrogate)
// is one reverse loop over T that recomputes S and V from H. Both are
// instantiated for float (training, inference) and double (finite-difference
// gradient checks).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_KERNELS_NEURONKERNELS_H
#define SNN_RUNTIME_KERNELS_NEURONKERNELS_H

#include <ATen/core/Tensor.h>
#include <cstdint>

namespace snn::runtime {

enum class NeuronKind { IF, LIF, PLIF };
/// The surrogates of schema::surrogateSpecs(), in its order (the table's index
/// is the value): Sigmoid and ATan have their own inlined loops, the others
/// share one evaluator.
enum class Surrogate {
  Sigmoid,
  ATan,
  PiecewiseQuadratic,
  PiecewiseExp,
  SoftSign,
  SuperSpike,
  NonzeroSignLogAbs,
  Erf,
  PiecewiseLeakyReLU,
  SquarewaveFourierSeries,
  S2NN,
  QPseudoSpike,
  LeakyKReLU,
  FakeNumericalGradient,
  LogTailedReLU,
  Rect,
};
inline constexpr int kSurrogateCount = int(Surrogate::Rect) + 1;

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
  /// The surrogate's parameters (schema::SurrogateSpec says which is which).
  float alpha = 4.0f;
  float beta = 0.0f;
};

/// The instruction set of the float32 loops. The runtime picks the best one
/// the CPU supports; tests and benchmarks may switch to compare them (results
/// are bit-identical: only the vector width differs).
enum class KernelIsa { Baseline, Avx2 };
KernelIsa neuronKernelIsa();
/// Returns false, changing nothing, if this build or CPU lacks `isa`.
bool setNeuronKernelIsa(KernelIsa isa);

/// The forward on raw memory: `x`, `spikes` and (if not null) `h` hold T*M
/// values, step-major ([T, M]). `k` is sigmoid(w) for PLIF, ignored
/// otherwise. The membrane starts at vReset (0 for soft reset). Returns the
/// number of spikes written, counted in the loop that writes them.
/// Overloaded for float and double.
int64_t neuronForwardRaw(const NeuronConfig &config, float k, const float *x,
                      float *spikes, float *h, int64_t steps,
                      int64_t neuronsPerStep);
int64_t neuronForwardRaw(const NeuronConfig &config, double k, const double *x,
                      double *spikes, double *h, int64_t steps,
                      int64_t neuronsPerStep);

/// BPTT on raw memory, all [T, M] step-major: from dL/dspikes and the saved
/// pre-fire potentials `h`, writes dL/dx to `gradX`. For PLIF, `x` (the
/// forward's input) must be given and the result is dL/dw for
/// k = sigmoid(w); otherwise `x` may be null and the result is 0.
/// Deterministic: the PLIF reduction sums fixed tiles in a fixed order, so
/// it does not even depend on the thread count. Overloaded for float and
/// double.
double neuronBackwardRaw(const NeuronConfig &config, float k,
                         const float *gradSpikes, const float *h,
                         const float *x, float *gradX, int64_t steps,
                         int64_t neuronsPerStep);
double neuronBackwardRaw(const NeuronConfig &config, double k,
                         const double *gradSpikes, const double *h,
                         const double *x, double *gradX, int64_t steps,
                         int64_t neuronsPerStep);

struct NeuronForwardResult {
  at::Tensor spikes; // same shape as x
  at::Tensor h;      // pre-fire potential per step, or undefined
  int64_t fired = 0; // spikes in `spikes` (FiringCounts.h)
};

/// Runs the neuron over dim 0 of `x` [T, N, ...] (float32 or float64 CPU).
NeuronForwardResult neuronForward(const at::Tensor &x,
                                  const NeuronConfig &config, double k = 0.0,
                                  bool saveH = false);

struct NeuronBackwardResult {
  at::Tensor gradX;   // same shape as x
  double gradW = 0.0; // PLIF's dL/dw; 0 for IF and LIF
};

/// BPTT over dim 0. `gradSpikes` and `h` have x's shape and dtype; `x` is the
/// forward's input, read for PLIF only (may be undefined otherwise); `k` is
/// the one the forward used.
NeuronBackwardResult neuronBackward(const at::Tensor &gradSpikes,
                                    const at::Tensor &h, const at::Tensor &x,
                                    const NeuronConfig &config, double k);

/// PLIF's decay k = sigmoid(w), computed by ATen in w's dtype exactly as the
/// PyTorch reference does. `w` must hold one float32 or float64 element.
double plifDecay(const at::Tensor &w);

} // namespace snn::runtime

#endif // SNN_RUNTIME_KERNELS_NEURONKERNELS_H
