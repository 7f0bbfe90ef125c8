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

#include <chrono>
#include <iostream>
#include <limits>
#include <mutex>

namespace snn::runtime {

namespace {
std::mutex mutex;
std::vector<EventKernelLayer> layers;
std::optional<std::string> crossoversFile; // unset: userKernelCrossoversPath()
bool warned = false;

/// The layer of `key`; `mutex` held.
EventKernelLayer *findLocked(const std::string &key) {
  for (EventKernelLayer &layer : layers)
    if (layer.key == key)
      return &layer;
  return nullptr;
}

/// The crossover of `key`, measuring it (through the file) the first time;
/// `mutex` held.
EventKernelLayer &layerLocked(const std::string &key,
                              const std::function<KernelCrossover()> &measure) {
  if (EventKernelLayer *known = findLocked(key))
    return *known;
  if (!crossoversFile)
    crossoversFile = userKernelCrossoversPath();
  EventKernelLayer layer;
  layer.key = key;
  if (crossoversFile->empty()) {
    layer.crossover = measure();
    layer.crossover.threshold =
        crossoverDensity(layer.crossover.denseSeconds, layer.crossover.fixedSeconds,
                         layer.crossover.eventSeconds, layer.crossover.density);
  } else {
    SharedCrossover shared = sharedCrossover(*crossoversFile, key, measure);
    layer.crossover = shared.crossover;
    layer.fromFile = shared.fromFile;
    if (!shared.warning.empty() && !warned) {
      warned = true;
      std::cerr << ("warning: kernel crossovers: " + shared.warning + "\n") << std::flush;
    }
  }
  layers.push_back(std::move(layer));
  return layers.back();
}

/// Whether a call of `key` on an input of `density` takes the event kernel,
/// counted under its layer.
EventKernelUse decide(const std::string &key, double density,
                      const std::function<KernelCrossover()> &measure) {
  std::lock_guard<std::mutex> lock(mutex);
  EventKernelLayer &layer = layerLocked(key, measure);
  bool event = density <= layer.crossover.threshold;
  ++(event ? layer.eventCalls : layer.denseCalls);
  layer.densitySum += density;
  return event ? EventKernelUse::Event : EventKernelUse::Dense;
}

std::string linearKey(const at::Tensor &x, const at::Tensor &weight, bool training) {
  return "linear " + formatShape(x.sizes()) + " -> " + std::to_string(weight.size(0)) +
         (training ? ", training" : "");
}

std::string convKey(const at::Tensor &x, const at::Tensor &weight, const SpikeConvGeometry &g,
                    bool training) {
  return "conv2d " + formatShape(x.sizes()) + " -> " + formatShape(weight.sizes()) + " stride " +
         std::to_string(g.stride[0]) + "x" + std::to_string(g.stride[1]) + " padding " +
         std::to_string(g.padding[0]) + "x" + std::to_string(g.padding[1]) +
         (training ? ", training" : "");
}
} // namespace

double measuredThreshold(const std::string &key,
                         const std::function<KernelCrossover()> &measure) {
  std::lock_guard<std::mutex> lock(mutex);
  return layerLocked(key, measure).crossover.threshold;
}

std::optional<double> rememberedThreshold(const std::string &key) {
  std::lock_guard<std::mutex> lock(mutex);
  if (const EventKernelLayer *layer = findLocked(key))
    return layer->crossover.threshold;
  return std::nullopt;
}

void useKernelCrossoversFile(const std::string &path) {
  std::lock_guard<std::mutex> lock(mutex);
  crossoversFile = path;
  layers.clear();
  warned = false;
}

std::vector<EventKernelLayer> eventKernelLayers() {
  std::lock_guard<std::mutex> lock(mutex);
  return layers;
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

EventKernelUse linearEventKernelUse(const at::Tensor &x, const at::Tensor &weight,
                                    const at::Tensor &bias, bool training) {
  std::optional<double> density = spikeDensity(x);
  if (!density)
    return EventKernelUse::NotSpikes;
  return decide(linearKey(x, weight, training), *density, [&] {
    c10::NoGradGuard noGrad;
    at::Tensor input = x.detach(), w = weight.detach();
    at::Tensor b = bias.defined() ? bias.detach() : at::Tensor();
    at::Tensor none = at::zeros_like(input);
    at::Tensor upstream = training ? at::ones({input.size(0), w.size(0)}) : at::Tensor();
    // Each path as a call runs it: the event one packs its input every time.
    auto event = [&](const at::Tensor &in) {
      SpikeRows s = *packSpikes(in);
      spikeLinearForward(s, w, b);
      if (training)
        spikeLinearWeightGrad(s, upstream);
    };
    KernelCrossover c;
    c.density = *density;
    c.denseSeconds = bestSeconds([&] {
      threadedLinear(input, w, b);
      if (training)
        at::mm(upstream.t(), input);
    });
    c.eventSeconds = bestSeconds([&] { event(input); });
    c.fixedSeconds = bestSeconds([&] { event(none); });
    return c;
  });
}

EventKernelUse convEventKernelUse(const at::Tensor &x, const at::Tensor &weight,
                                  const at::Tensor &bias, const SpikeConvGeometry &g,
                                  bool training) {
  std::optional<double> density = spikeDensity(x);
  if (!density)
    return EventKernelUse::NotSpikes;
  return decide(convKey(x, weight, g, training), *density, [&] {
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
    KernelCrossover c;
    c.density = *density;
    c.denseSeconds = bestSeconds(dense);
    c.eventSeconds = bestSeconds([&] { event(input); });
    c.fixedSeconds = bestSeconds([&] { event(none); });
    return c;
  });
}

} // namespace snn::runtime
