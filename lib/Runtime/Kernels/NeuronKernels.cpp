//===- NeuronKernels.cpp - Fused multi-step neuron forward and BPTT -------===//
//
// The tensor-level API and the choice of instruction set. The loops
// themselves are in NeuronKernelsImpl.h: one loop over T per tile of
// neurons, the per-neuron state of a tile (the membrane forward, dL/dV
// backward) in a small stack array (L1) across all steps, and a branch-free
// inner loop over the tile that the compiler vectorises. Each forward
// expression keeps PyTorch's operation order and no a*b+c is fused into an
// FMA (-ffp-contract=off): spikes match the reference bit for bit.
//
//===----------------------------------------------------------------------===//

#include "NeuronKernelsIsa.h"

#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Kernels/NeuronKernels.h"
#include "snn/Runtime/Support/TensorIO.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/sigmoid.h>

#include <atomic>

namespace snn::runtime {

namespace {

bool avx2Available() {
#ifdef SNN_HAVE_AVX2_KERNELS
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

KernelIsa bestIsa() {
  return avx2Available() ? KernelIsa::Avx2 : KernelIsa::Baseline;
}

std::atomic<KernelIsa> &selectedIsa() {
  static std::atomic<KernelIsa> isa{bestIsa()};
  return isa;
}

bool useAvx2() { return selectedIsa().load() == KernelIsa::Avx2; }

void requireNeuronTensor(const at::Tensor &t, const char *what) {
  bool floating =
      t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble;
  if (!floating || !t.device().is_cpu())
    throw Error(std::string(what) + " must be a float32 or float64 CPU tensor");
  if (t.dim() < 1)
    throw Error(std::string(what) + " must be [T, ...]");
}

template <typename T>
NeuronBackwardResult backwardTyped(const at::Tensor &gradSpikes,
                                   const at::Tensor &h, const at::Tensor &x,
                                   const NeuronConfig &config, double k) {
  NeuronBackwardResult result;
  result.gradX = at::empty(h.sizes(), h.options());
  int64_t steps = h.size(0);
  if (h.numel() == 0)
    return result;
  const T *xData = config.kind == NeuronKind::PLIF ? x.data_ptr<T>() : nullptr;
  result.gradW = neuronBackwardRaw(
      config, T(k), gradSpikes.data_ptr<T>(), h.data_ptr<T>(), xData,
      result.gradX.data_ptr<T>(), steps, h.numel() / steps);
  return result;
}

} // namespace

KernelIsa neuronKernelIsa() { return selectedIsa().load(); }

bool setNeuronKernelIsa(KernelIsa isa) {
  if (isa == KernelIsa::Avx2 && !avx2Available())
    return false;
  selectedIsa().store(isa);
  return true;
}

int64_t neuronForwardRaw(const NeuronConfig &config, float k, const float *x,
                         float *spikes, float *h, int64_t steps,
                         int64_t neuronsPerStep) {
  if (useAvx2())
    return avx2::forward(config, k, x, spikes, h, steps, neuronsPerStep);
  return baseline::forward(config, k, x, spikes, h, steps, neuronsPerStep);
}

int64_t neuronForwardRaw(const NeuronConfig &config, double k, const double *x,
                         double *spikes, double *h, int64_t steps,
                         int64_t neuronsPerStep) {
  return baseline::forward(config, k, x, spikes, h, steps, neuronsPerStep);
}

double neuronBackwardRaw(const NeuronConfig &config, float k,
                         const float *gradSpikes, const float *h,
                         const float *x, float *gradX, int64_t steps,
                         int64_t neuronsPerStep) {
  if (useAvx2())
    return avx2::backward(config, k, gradSpikes, h, x, gradX, steps,
                          neuronsPerStep);
  return baseline::backward(config, k, gradSpikes, h, x, gradX, steps,
                            neuronsPerStep);
}

double neuronBackwardRaw(const NeuronConfig &config, double k,
                         const double *gradSpikes, const double *h,
                         const double *x, double *gradX, int64_t steps,
                         int64_t neuronsPerStep) {
  return baseline::backward(config, k, gradSpikes, h, x, gradX, steps,
                            neuronsPerStep);
}

NeuronForwardResult neuronForward(const at::Tensor &x,
                                  const NeuronConfig &config, double k,
                                  bool saveH) {
  requireNeuronTensor(x, "neuron input");
  at::Tensor input = x.contiguous();
  NeuronForwardResult result;
  result.spikes = at::empty(input.sizes(), input.options());
  if (saveH)
    result.h = at::empty(input.sizes(), input.options());
  int64_t steps = input.size(0);
  if (input.numel() == 0)
    return result;
  int64_t neurons = input.numel() / steps;
  if (input.scalar_type() == at::kDouble)
    result.fired = neuronForwardRaw(
        config, k, input.data_ptr<double>(), result.spikes.data_ptr<double>(),
        saveH ? result.h.data_ptr<double>() : nullptr, steps, neurons);
  else
    result.fired = neuronForwardRaw(config, float(k), input.data_ptr<float>(),
                                    result.spikes.data_ptr<float>(),
                                    saveH ? result.h.data_ptr<float>() : nullptr,
                                    steps, neurons);
  return result;
}

NeuronBackwardResult neuronBackward(const at::Tensor &gradSpikes,
                                    const at::Tensor &h, const at::Tensor &x,
                                    const NeuronConfig &config, double k) {
  requireNeuronTensor(h, "saved potential");
  bool plif = config.kind == NeuronKind::PLIF;
  if (gradSpikes.sizes() != h.sizes() ||
      gradSpikes.scalar_type() != h.scalar_type() ||
      (plif && (!x.defined() || x.sizes() != h.sizes() ||
                x.scalar_type() != h.scalar_type())))
    throw Error("neuron backward: gradient " + formatShape(gradSpikes.sizes()) +
                " and saved tensors " + formatShape(h.sizes()) +
                " do not match");
  // Gradients from mean_time arrive expanded (stride 0 over T); the kernel
  // walks dense [T, M] memory.
  at::Tensor grad = gradSpikes.contiguous();
  at::Tensor saved = h.contiguous();
  at::Tensor input = plif ? x.contiguous() : at::Tensor();
  if (h.scalar_type() == at::kDouble)
    return backwardTyped<double>(grad, saved, input, config, k);
  return backwardTyped<float>(grad, saved, input, config, k);
}

double plifDecay(const at::Tensor &w) {
  bool floating =
      w.scalar_type() == at::kFloat || w.scalar_type() == at::kDouble;
  if (w.numel() != 1 || !floating)
    throw Error("PLIF weight w must be one float32 or float64 value, got " +
                std::string(c10::toString(w.scalar_type())) + " of shape " +
                formatShape(w.sizes()));
  // ATen's own sigmoid in w's dtype, as the reference's `w.sigmoid()` uses.
  return at::sigmoid(w).item<double>();
}

} // namespace snn::runtime
