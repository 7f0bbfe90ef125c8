//===- NeuronKernels.cpp - Fused multi-step neuron forward ----------------===//
//
// One loop over T per tile of neurons; the membrane of a tile stays in a small
// stack array (L1) across all steps, and the inner loop over the tile has no
// branches, so the compiler vectorises it. Each expression keeps PyTorch's
// float32 operation order, and this file is built with -ffp-contract=off so
// that no a*b+c is fused into an FMA: spikes match the reference bit for bit.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/NeuronKernels.h"
#include "snn/Runtime/Error.h"
#include "snn/Runtime/TensorIO.h"

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/sigmoid.h>

#include <algorithm>

namespace snn::runtime {

namespace {

/// Neurons per tile: the membrane array (1 KiB) stays in L1.
constexpr int64_t kTile = 256;
/// Element-steps per parallel chunk, so tiny layers do not pay for threads.
constexpr int64_t kMinWorkPerChunk = 1 << 15;

// Charges: H from V (before the step) and X. SpikingJelly's expressions.
struct IFCharge {
  float operator()(float v, float x) const { return v + x; }
};
struct LIFDecayInputCharge {
  float vReset, tau;
  float operator()(float v, float x) const {
    return v + (x - (v - vReset)) / tau;
  }
};
struct LIFCharge {
  float vReset, tau;
  float operator()(float v, float x) const {
    return v - (v - vReset) / tau + x;
  }
};
struct PLIFDecayInputCharge {
  float vReset, k;
  float operator()(float v, float x) const {
    return v + (x - (v - vReset)) * k;
  }
};
struct PLIFCharge {
  float vReset, k;
  float operator()(float v, float x) const {
    return v - (v - vReset) * k + x;
  }
};

// Resets: V after the step from H and the spike S (0 or 1).
struct HardReset {
  float vReset;
  float operator()(float h, float s) const {
    return s * vReset + (1.0f - s) * h;
  }
};
struct SoftReset {
  float vThreshold;
  float operator()(float h, float s) const { return h - s * vThreshold; }
};

struct Buffers {
  const float *x;
  float *spikes;
  float *h; // null unless SaveH
  int64_t steps;
  int64_t stride; // neurons per step
};

/// Runs all steps for neurons [begin, begin + count) of every step.
template <typename Charge, typename Reset, bool SaveH>
void runTile(const Charge &charge, const Reset &reset, float vThreshold,
             float vInit, const Buffers &buffers, int64_t begin,
             int64_t count) {
  float v[kTile];
  std::fill(v, v + count, vInit);
  for (int64_t t = 0; t < buffers.steps; ++t) {
    int64_t offset = t * buffers.stride + begin;
    const float *__restrict x = buffers.x + offset;
    float *__restrict spikes = buffers.spikes + offset;
    float *__restrict hSaved = SaveH ? buffers.h + offset : nullptr;
    for (int64_t i = 0; i < count; ++i) {
      float h = charge(v[i], x[i]);
      float s = float(h - vThreshold >= 0.0f);
      spikes[i] = s;
      if constexpr (SaveH)
        hSaved[i] = h;
      v[i] = reset(h, s);
    }
  }
}

template <typename Charge, typename Reset, bool SaveH>
void runAll(const Charge &charge, const Reset &reset, float vThreshold,
            float vInit, const Buffers &buffers) {
  int64_t grain =
      std::max<int64_t>(kTile, kMinWorkPerChunk / std::max<int64_t>(buffers.steps, 1));
  at::parallel_for(0, buffers.stride, grain, [&](int64_t begin, int64_t end) {
    for (int64_t tile = begin; tile < end; tile += kTile)
      runTile<Charge, Reset, SaveH>(charge, reset, vThreshold, vInit, buffers,
                                    tile, std::min(kTile, end - tile));
  });
}

template <typename Charge>
void dispatchReset(const NeuronConfig &config, const Charge &charge,
                   const Buffers &buffers) {
  // The membrane starts at v_reset, or at 0 for soft reset.
  float vth = config.vThreshold;
  if (config.hardReset) {
    HardReset reset{config.vReset};
    if (buffers.h)
      runAll<Charge, HardReset, true>(charge, reset, vth, config.vReset, buffers);
    else
      runAll<Charge, HardReset, false>(charge, reset, vth, config.vReset, buffers);
  } else {
    SoftReset reset{vth};
    if (buffers.h)
      runAll<Charge, SoftReset, true>(charge, reset, vth, 0.0f, buffers);
    else
      runAll<Charge, SoftReset, false>(charge, reset, vth, 0.0f, buffers);
  }
}

} // namespace

void neuronForwardRaw(const NeuronConfig &config, float k, const float *x,
                      float *spikes, float *h, int64_t steps,
                      int64_t neuronsPerStep) {
  Buffers buffers{x, spikes, h, steps, neuronsPerStep};
  // Soft reset charges with v_reset = 0.
  float vReset = config.hardReset ? config.vReset : 0.0f;
  switch (config.kind) {
  case NeuronKind::IF:
    return dispatchReset(config, IFCharge{}, buffers);
  case NeuronKind::LIF:
    if (config.decayInput)
      return dispatchReset(config, LIFDecayInputCharge{vReset, config.tau},
                           buffers);
    return dispatchReset(config, LIFCharge{vReset, config.tau}, buffers);
  case NeuronKind::PLIF:
    if (config.decayInput)
      return dispatchReset(config, PLIFDecayInputCharge{vReset, k}, buffers);
    return dispatchReset(config, PLIFCharge{vReset, k}, buffers);
  }
}

NeuronForwardResult neuronForward(const at::Tensor &x,
                                  const NeuronConfig &config, float k,
                                  bool saveH) {
  if (x.scalar_type() != at::kFloat || !x.device().is_cpu())
    throw Error("neuron input must be a float32 CPU tensor");
  if (x.dim() < 1)
    throw Error("neuron input must be [T, ...]");
  at::Tensor input = x.contiguous();
  NeuronForwardResult result;
  result.spikes = at::empty(input.sizes(), input.options());
  if (saveH)
    result.h = at::empty(input.sizes(), input.options());
  int64_t steps = input.size(0);
  if (input.numel() == 0)
    return result;
  neuronForwardRaw(config, k, input.data_ptr<float>(),
                   result.spikes.data_ptr<float>(),
                   saveH ? result.h.data_ptr<float>() : nullptr, steps,
                   input.numel() / steps);
  return result;
}

float plifDecay(const at::Tensor &w) {
  if (w.numel() != 1 || w.scalar_type() != at::kFloat)
    throw Error("PLIF weight w must be one float32 value, got shape " +
                formatShape(w.sizes()));
  // ATen's own sigmoid, as the reference's `w.sigmoid()` uses.
  return at::sigmoid(w).item<float>();
}

} // namespace snn::runtime
