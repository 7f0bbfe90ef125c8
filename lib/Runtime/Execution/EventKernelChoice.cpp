//===- EventKernelChoice.cpp - Event-driven or dense, measured per layer --===//

#include "snn/Runtime/Execution/EventKernelChoice.h"
#include "snn/Runtime/Autograd/LinearAutograd.h"
#include "snn/Runtime/Kernels/SpikeBits.h"
#include "snn/Runtime/Kernels/SpikeLinearKernels.h"
#include "snn/Runtime/Support/TensorIO.h"

#include <ATen/ops/conv2d.h>
#include <ATen/ops/convolution_backward.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros_like.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <mutex>

namespace snn::runtime {

namespace {
std::mutex mutex;
std::vector<std::pair<std::string, KernelCrossover>> measured;

/// The remembered crossover of `key`; `mutex` held.
std::optional<double> findLocked(const std::string &key) {
  for (const auto &[name, crossover] : measured)
    if (name == key)
      return crossover.threshold;
  return std::nullopt;
}
} // namespace

double crossoverDensity(double denseSeconds, double fixedSeconds, double eventSeconds,
                        double density) {
  if (fixedSeconds >= denseSeconds)
    return 0.0;
  double perDensity = density > 0 ? (eventSeconds - fixedSeconds) / density : 0.0;
  if (perDensity <= 0)
    return 1.0;
  return std::clamp((denseSeconds - fixedSeconds) / perDensity, 0.0, 1.0);
}

double measuredThreshold(const std::string &key,
                         const std::function<KernelCrossover()> &measure) {
  // Held while measuring: two threads never time kernels against each other.
  std::lock_guard<std::mutex> lock(mutex);
  if (std::optional<double> known = findLocked(key))
    return *known;
  KernelCrossover c = measure();
  c.threshold = crossoverDensity(c.denseSeconds, c.fixedSeconds, c.eventSeconds, c.density);
  measured.emplace_back(key, c);
  return c.threshold;
}

std::optional<double> rememberedThreshold(const std::string &key) {
  std::lock_guard<std::mutex> lock(mutex);
  return findLocked(key);
}

std::vector<std::pair<std::string, KernelCrossover>> measuredCrossovers() {
  std::lock_guard<std::mutex> lock(mutex);
  return measured;
}

double bestSeconds(const std::function<void()> &run, int repeats) {
  using Clock = std::chrono::steady_clock;
  run();
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < repeats; ++i) {
    auto start = Clock::now();
    run();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  return best;
}

double linearEventThreshold(const at::Tensor &x, const at::Tensor &weight,
                            const at::Tensor &bias) {
  bool grad = c10::GradMode::is_enabled() && (x.requires_grad() || weight.requires_grad());
  std::string key = "linear " + formatShape(x.sizes()) + " -> " +
                    std::to_string(weight.size(0)) + (grad ? ", training" : "");
  if (std::optional<double> known = rememberedThreshold(key))
    return *known;
  c10::NoGradGuard noGrad;
  at::Tensor input = x.detach(), w = weight.detach();
  at::Tensor b = bias.defined() ? bias.detach() : at::Tensor();
  std::optional<SpikeRows> spikes = packSpikes(input);
  if (!spikes)
    return 0.0;
  at::Tensor none = at::zeros_like(input);
  at::Tensor upstream = grad ? at::ones({input.size(0), w.size(0)}) : at::Tensor();
  // Each path as a call runs it: the event one packs its input every time.
  auto event = [&](const at::Tensor &in) {
    SpikeRows s = *packSpikes(in);
    spikeLinearForward(s, w, b);
    if (grad)
      spikeLinearWeightGrad(s, upstream);
  };
  return measuredThreshold(key, [&] {
    KernelCrossover c;
    c.density = spikes->density();
    c.denseSeconds = bestSeconds([&] {
      threadedLinear(input, w, b);
      if (grad)
        at::mm(upstream.t(), input);
    });
    c.eventSeconds = bestSeconds([&] { event(input); });
    c.fixedSeconds = bestSeconds([&] { event(none); });
    return c;
  });
}

double convEventThreshold(const at::Tensor &x, const at::Tensor &weight, const at::Tensor &bias,
                          const SpikeConvGeometry &g, bool training) {
  std::string key = "conv2d " + formatShape(x.sizes()) + " -> " + formatShape(weight.sizes()) +
                    " stride " + std::to_string(g.stride[0]) + "x" + std::to_string(g.stride[1]) +
                    " padding " + std::to_string(g.padding[0]) + "x" +
                    std::to_string(g.padding[1]) + (training ? ", training" : "");
  if (std::optional<double> known = rememberedThreshold(key))
    return *known;
  std::optional<double> density = spikeDensity(x);
  if (!density)
    return 0.0;
  c10::NoGradGuard noGrad;
  at::Tensor input = x.detach(), w = weight.detach();
  at::Tensor b = bias.defined() ? bias.detach() : at::Tensor();
  at::Tensor none = at::zeros_like(input);
  // The dense path as a training call runs it: forward, then the weight's
  // gradient (x's is dense on both paths).
  auto dense = [&] {
    at::Tensor y = at::conv2d(input, w, b, g.stride, g.padding, g.dilation);
    if (training)
      at::convolution_backward(y, input, w, c10::nullopt, g.stride, g.padding, g.dilation,
                               false, {0, 0}, 1, {false, true, false});
  };
  auto event = [&](const at::Tensor &in) {
    at::Tensor y = spikeConv2dForward(in, w, b, g);
    if (training)
      spikeConv2dWeightGrad(packSpikeBits(in.contiguous(at::MemoryFormat::ChannelsLast)),
                            in.sizes(), y, w.sizes(), g);
  };
  return measuredThreshold(key, [&] {
    KernelCrossover c;
    c.density = *density;
    c.denseSeconds = bestSeconds(dense);
    c.eventSeconds = bestSeconds([&] { event(input); });
    c.fixedSeconds = bestSeconds([&] { event(none); });
    return c;
  });
}

} // namespace snn::runtime
