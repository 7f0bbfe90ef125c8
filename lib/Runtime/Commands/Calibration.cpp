//===- Calibration.cpp - Measuring kernels and collectives ----------------===//
//
// Each compute kind runs the same calls the executor makes for its op
// (LayerOps.cpp, NeuronOps.cpp), with the input requiring a gradient as in a
// layer inside a network, so backward computes the input's gradient as well
// as the weights'.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Commands/Calibration.h"
#include "snn/Runtime/Autograd/BatchNormAutograd.h"
#include "snn/Runtime/Autograd/LinearAutograd.h"
#include "snn/Runtime/Autograd/MaxPoolAutograd.h"
#include "snn/Runtime/Autograd/NeuronAutograd.h"
#include "snn/Runtime/Kernels/BatchNormKernels.h"
#include "snn/Runtime/Kernels/MaxPoolKernels.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/NumberFormat.h"

#include <ATen/ops/add.h>
#include <ATen/ops/batch_norm.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/max_pool2d.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <sstream>

namespace snn::runtime {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// A leaf that needs a gradient, as a layer's input or weight does.
at::Tensor trainable(at::IntArrayRef shape) {
  return at::randn(shape).requires_grad_(true);
}

/// The gradient arriving from the layer above: made once per case (a
/// training step does not allocate it in the layer either).
using OutputGrad = std::shared_ptr<at::Tensor>;

/// Forward's result backward, then the leaves' gradients dropped: every
/// call computes them afresh (no accumulation into the previous call's).
void backwardAndClear(const at::Tensor &y, const OutputGrad &grad,
                      std::initializer_list<at::Tensor> leaves) {
  if (!grad->defined() || grad->sizes() != y.sizes())
    *grad = at::ones(y.sizes());
  y.backward(*grad);
  for (at::Tensor leaf : leaves)
    leaf.mutable_grad() = at::Tensor();
}

/// A configuration of a kind: its size in the planner's unit and a closure
/// that runs one training call on tensors allocated once.
struct ComputeCase {
  double size = 0;
  std::function<void()> call;
};

ComputeCase linearCase(const LinearShape &s) {
  at::Tensor x = trainable({s.rows, s.in});
  at::Tensor w = trainable({s.out, s.in}), b = trainable({s.out});
  w.detach().mul_(1.0 / std::sqrt(double(s.in)));
  OutputGrad g = std::make_shared<at::Tensor>();
  return {linearWork(s), [=] { backwardAndClear(threadedLinear(x, w, b), g, {x, w, b}); }};
}

ComputeCase convCase(const ConvShape &s) {
  at::Tensor x = trainable({s.batch, s.in, s.height, s.width});
  at::Tensor w = trainable({s.out, s.in, 3, 3}), b = trainable({s.out});
  OutputGrad g = std::make_shared<at::Tensor>();
  return {convWork(s), [=] {
            backwardAndClear(at::conv2d(x, w, b, {1, 1}, {1, 1}, {1, 1}, 1), g, {x, w, b});
          }};
}

/// A LIF layer with SpikingJelly's defaults (tau 2, hard reset to 0, the
/// sigmoid surrogate), the executor's lif_node.
ComputeCase neuronCase(const std::vector<int64_t> &shape) {
  NeuronConfig config;
  config.kind = NeuronKind::LIF;
  at::Tensor x = trainable(shape);
  x.detach().mul_(1.5); // inputs around the threshold: some neurons fire
  OutputGrad g = std::make_shared<at::Tensor>();
  return {double(x.numel()), [=] {
            backwardAndClear(neuronSpikesWithGrad(x, at::Tensor(), config), g, {x});
          }};
}

/// The runtime's BatchNorm where it applies, ATen's otherwise, as
/// LayerOps.cpp chooses.
ComputeCase batchNormCase(const std::vector<int64_t> &shape) {
  int64_t channels = shape.at(1);
  at::Tensor x = trainable(shape), w = trainable({channels}), b = trainable({channels});
  at::Tensor mean = at::zeros({channels}), var = at::ones({channels});
  bool fast = batchNormKernelAvailable() && batchNormKernelApplies(x, w, b, mean, var);
  OutputGrad g = std::make_shared<at::Tensor>();
  return {double(x.numel()), [=] {
            at::Tensor y = fast ? batchNormTrainingWithGrad(x, w, b, mean, var, 0.1, 1e-5)
                                : at::batch_norm(x, w, b, mean, var, true, 0.1, 1e-5, true);
            backwardAndClear(y, g, {x, w, b});
          }};
}

ComputeCase maxPoolCase(const std::vector<int64_t> &shape) {
  at::Tensor x = trainable(shape);
  bool fast = maxPoolKernelApplies({2, 2}, {2, 2}, {0, 0}, {1, 1}, false);
  OutputGrad g = std::make_shared<at::Tensor>();
  return {double(x.numel()), [=] {
            at::Tensor y = fast ? maxPoolWithGrad(x, MaxPoolWindow{})
                                : at::max_pool2d(x, {2, 2}, {2, 2});
            backwardAndClear(y, g, {x});
          }};
}

ComputeCase addCase(const std::vector<int64_t> &shape) {
  at::Tensor a = trainable(shape), b = trainable(shape);
  OutputGrad g = std::make_shared<at::Tensor>();
  return {double(a.numel()), [=] { backwardAndClear(at::add(a, b), g, {a, b}); }};
}

/// Measures every case of one kind (one at a time: only its tensors are
/// alive), ascending by size; of equal sizes the faster stays; then its
/// suspect points again (remeasureSuspectPoints).
template <typename Shape, typename MakeCase>
schema::ComputeCurve measureKind(const std::string &kind, const std::vector<Shape> &shapes,
                                 MakeCase makeCase, const CalibrationTiming &timing,
                                 const CalibrationProgressFn &progress) {
  std::map<double, std::pair<double, size_t>> fastest; // size -> seconds, shape
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (progress)
      progress(kind, i, shapes.size());
    ComputeCase c = makeCase(shapes[i]);
    double seconds = medianSeconds(c.call, timing);
    auto [it, inserted] = fastest.emplace(c.size, std::make_pair(seconds, i));
    if (!inserted && seconds < it->second.first)
      it->second = {seconds, i};
  }
  if (fastest.empty())
    throw Error("calibrate: no sizes to measure for '" + kind + "'");
  schema::ComputeCurve curve{kind, {}};
  std::vector<size_t> shapeOf;
  for (auto [size, measured] : fastest) {
    curve.points.push_back({size, measured.first});
    shapeOf.push_back(measured.second);
  }
  remeasureSuspectPoints(curve, [&](size_t point) {
    return medianSeconds(makeCase(shapes[shapeOf[point]]).call, timing);
  });
  return curve;
}

/// Each call's median over its samples.
std::vector<double> mediansOf(const std::vector<std::vector<double>> &samples) {
  std::vector<double> medians;
  for (const std::vector<double> &sampled : samples)
    medians.push_back(median(sampled));
  return medians;
}

} // namespace

std::vector<size_t> suspectComputePoints(const schema::ComputeCurve &curve) {
  const std::vector<schema::ProfilePoint> &points = curve.points;
  std::vector<size_t> suspects;
  for (size_t i = 0; i < points.size(); ++i) {
    bool slowerThanLarger = i + 1 < points.size() &&
                            points[i].seconds > kSuspectFactor * points[i + 1].seconds;
    bool lastRateJumps =
        i > 0 && i + 1 == points.size() &&
        points[i].seconds / points[i].size >
            kSuspectFactor * points[i - 1].seconds / points[i - 1].size;
    if (slowerThanLarger || lastRateJumps)
      suspects.push_back(i);
  }
  return suspects;
}

void remeasureSuspectPoints(schema::ComputeCurve &curve,
                            const std::function<double(size_t)> &measure) {
  for (int round = 0; round < kSuspectRemeasures; ++round)
    for (size_t point : suspectComputePoints(curve))
      curve.points[point].seconds = std::min(curve.points[point].seconds, measure(point));
}

double medianSeconds(const std::function<void()> &call, const CalibrationTiming &timing) {
  return interleavedMedianSeconds({call}, timing, {}).front();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::function<void(int)> roundProgress(const CalibrationProgressFn &progress, std::string what,
                                       const CalibrationTiming &timing) {
  if (!progress)
    return {};
  size_t rounds = size_t(std::max(1, timing.repeats));
  return [progress, what = std::move(what), rounds](int round) {
    progress(what, size_t(round), rounds);
  };
}

InterleavedSampler::InterleavedSampler(std::vector<std::function<void()>> calls,
                                       const CalibrationTiming &timing,
                                       std::vector<int64_t> callsPerSample,
                                       std::function<void()> beforeSample)
    : calls(std::move(calls)), callsPerSample(std::move(callsPerSample)),
      firstCallApart(timing.firstCallApart), beforeSample(std::move(beforeSample)),
      samples(this->calls.size()), firstCalls(firstCallApart ? this->calls.size() : 0) {
  bool sized = this->callsPerSample.empty();
  for (const std::function<void()> &call : this->calls) {
    for (int w = 0; w < timing.warmups; ++w)
      call();
    if (!sized)
      continue;
    Clock::time_point start = Clock::now(); // one timed call sizes the samples
    call();
    double once = std::max(secondsSince(start), 1e-9);
    this->callsPerSample.push_back(
        std::clamp<int64_t>(int64_t(std::ceil(timing.minSampleSeconds / once)), 1, 10000));
  }
}

void InterleavedSampler::round() {
  for (size_t i = 0; i < calls.size(); ++i) {
    if (beforeSample)
      beforeSample();
    Clock::time_point start = Clock::now();
    if (firstCallApart) {
      calls[i]();
      firstCalls[i].push_back(secondsSince(start));
      start = Clock::now();
    }
    for (int64_t k = 0; k < callsPerSample[i]; ++k)
      calls[i]();
    samples[i].push_back(secondsSince(start) / double(callsPerSample[i]));
  }
}


std::vector<double> InterleavedSampler::medians() const { return mediansOf(samples); }

std::vector<double> InterleavedSampler::firstCallMedians() const { return mediansOf(firstCalls); }

std::vector<double> interleavedMedianSeconds(const std::vector<std::function<void()>> &calls,
                                             const CalibrationTiming &timing,
                                             const std::function<void(int)> &onRound,
                                             std::vector<int64_t> callsPerSample,
                                             const std::function<void()> &beforeSample) {
  InterleavedSampler sampler(calls, timing, std::move(callsPerSample), beforeSample);
  for (int round = 0; round < std::max(1, timing.repeats); ++round) {
    if (onRound)
      onRound(round);
    sampler.round();
  }
  return sampler.medians();
}

double linearWork(const LinearShape &s) {
  return double(s.rows) * double(s.out) * (2.0 * double(s.in) + 1.0);
}

double convWork(const ConvShape &s) {
  double outputs = double(s.batch) * double(s.out) * double(s.height) * double(s.width);
  return outputs * (2.0 * double(s.in) * 9.0 + 1.0);
}

CalibrationSizes defaultCalibrationSizes(bool quick) {
  if (quick)
    return {{{8, 16, 16}, {32, 64, 64}, {64, 128, 128}, {128, 256, 256}, {256, 512, 512}},
            {{4, 8, 8, 8, 8}, {8, 8, 16, 16, 16}, {8, 16, 32, 16, 16}, {8, 32, 32, 16, 16}},
            {{4, 8, 128}, {4, 8, 512}, {4, 16, 1024}, {4, 16, 4096}},
            {{8, 8, 8, 8}, {8, 16, 16, 16}, {16, 32, 16, 16}, {16, 64, 16, 16}},
            {{8, 8, 8, 8}, {8, 16, 16, 16}, {16, 32, 16, 16}, {16, 64, 16, 16}},
            {{8, 8, 8, 8}, {8, 16, 16, 16}, {16, 32, 16, 16}, {16, 64, 16, 16}}};
  // T*N 32..512 rows, 64..2048 features: the MLP and the VGG classifiers;
  // the first, tiny, point is the fixed cost of a call (autograd, dispatch).
  std::vector<LinearShape> gemm{
      {8, 16, 16},  {32, 64, 64}, {64, 256, 256}, {128, 512, 512}, {256, 1024, 1024}, {512, 2048, 2048}};
  // 8..128 channels on 8x8..64x64 images: the CSNN, VGG and SEW-ResNet. Every kind's first,
  // tiny, point is the fixed cost of a call, which the planner charges to smaller calls too
  // (a pipeline's microbatches of one sample).
  std::vector<ConvShape> conv{{2, 2, 4, 8, 8},       {8, 8, 8, 8, 8},  {16, 8, 16, 32, 32},
                              {16, 32, 32, 16, 16},  {8, 16, 32, 64, 64},
                              {16, 64, 128, 16, 16}, {16, 128, 128, 16, 16}};
  std::vector<std::vector<int64_t>> neuron{
      {4, 1, 256}, {4, 8, 512}, {4, 32, 2048}, {4, 16, 16, 32, 32}, {4, 16, 64, 32, 32},
      {4, 32, 64, 32, 32}};
  std::vector<std::vector<int64_t>> images{{4, 8, 4, 4},     {32, 16, 8, 8},
                                           {16, 64, 16, 16}, {64, 64, 16, 16},
                                           {64, 64, 32, 32}, {64, 128, 32, 32}};
  return {gemm, conv, neuron, images, images, images};
}

std::vector<schema::ComputeCurve> measureCompute(const CalibrationSizes &sizes,
                                                 const CalibrationTiming &timing,
                                                 const CalibrationProgressFn &progress) {
  using Shape = std::vector<int64_t>;
  return {measureKind("gemm", sizes.gemm, linearCase, timing, progress),
          measureKind("conv2d", sizes.conv2d, convCase, timing, progress),
          measureKind<Shape>("neuron", sizes.neuron, neuronCase, timing, progress),
          measureKind<Shape>("batch_norm", sizes.batchNorm, batchNormCase, timing, progress),
          measureKind<Shape>("max_pool", sizes.maxPool, maxPoolCase, timing, progress),
          measureKind<Shape>("elementwise", sizes.elementwise, addCase, timing, progress)};
}

std::vector<int64_t> defaultMessageBytes(bool quick) {
  const int64_t KiB = 1024, MiB = 1024 * KiB;
  if (quick)
    return {4 * KiB, 32 * KiB, 256 * KiB, 1 * MiB};
  return {4 * KiB, 64 * KiB, 256 * KiB, 1 * MiB, 4 * MiB, 16 * MiB};
}

std::string formatCommunicationResults(const std::vector<schema::CommunicationCurve> &curves) {
  std::string text;
  for (const schema::CommunicationCurve &curve : curves)
    for (size_t i = 0; i < curve.points.size(); ++i) {
      const schema::ProfilePoint &point = curve.points[i];
      text += curve.kind + " " + std::to_string(curve.ranks) + " " + formatDouble(point.size) +
              " " + formatDouble(point.seconds);
      if (i < curve.cpuPoints.size())
        text += " " + formatDouble(curve.cpuPoints[i].seconds);
      text += "\n";
    }
  return text;
}

std::vector<schema::CommunicationCurve> parseCommunicationResults(const std::string &text,
                                                                  const std::string &name) {
  std::vector<schema::CommunicationCurve> curves;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    std::istringstream fields(line);
    std::string kind, cpuText, rest;
    int64_t ranks = 0;
    double size = 0, seconds = 0, cpu = 0;
    bool valid = bool(fields >> kind >> ranks >> size >> seconds) && ranks >= 2 && size > 0 &&
                 seconds > 0 && std::isfinite(size) && std::isfinite(seconds);
    bool hasCpu = valid && bool(fields >> cpuText);
    if (hasCpu) {
      std::istringstream number(cpuText);
      valid = (number >> cpu) && number.peek() == EOF && cpu >= 0 && std::isfinite(cpu);
    }
    valid = valid && !(fields >> rest);
    bool newCurve =
        curves.empty() || curves.back().kind != kind || curves.back().ranks != ranks;
    // A curve's points either all carry their CPU seconds or none does.
    if (valid && !newCurve)
      valid = hasCpu == !curves.back().cpuPoints.empty();
    if (!valid)
      throw Error(name + ":" + std::to_string(number) +
                  ": expected 'KIND RANKS BYTES SECONDS [CPU_SECONDS]' (CPU seconds on every "
                  "point of a curve or on none), got '" + line + "'");
    if (newCurve)
      curves.push_back({kind, ranks, {}});
    curves.back().points.push_back({size, seconds});
    if (hasCpu)
      curves.back().cpuPoints.push_back({size, cpu});
  }
  return curves;
}

} // namespace snn::runtime
