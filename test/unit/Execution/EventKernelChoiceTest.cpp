//===- EventKernelChoiceTest.cpp - Event-driven or dense, measured --------===//
//
// The crossover arithmetic, the per-shape memory of measurements, the file
// that keeps them per machine (read by later processes instead of timing
// again, shared by machines, replaced when malformed), and the choice itself:
// a layer whose input's density crosses its crossover switches kernels, and
// its output stays within the float32 bound of the dense one. (Which kernel
// wins a timing depends on this machine; those tests preset the crossover.)
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Execution/EventKernelChoice.h"
#include "snn/Runtime/Execution/OpRegistry.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <unistd.h>

using namespace snn::runtime;
using Json = nlohmann::json;

namespace {

/// A crossover file of its own per test, removed afterwards; the process
/// starts over with it, as a new process would.
class CrossoverFile : public ::testing::Test {
protected:
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() /
          ("snn-crossovers-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    path = (dir / "kernel-crossovers.json").string();
    useKernelCrossoversFile(path);
  }
  void TearDown() override {
    useKernelCrossoversFile("");
    std::filesystem::remove_all(dir);
  }
  Json read() const {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return Json::parse(text.str());
  }
  /// A file holding `threshold` for `key` on this machine.
  void preset(const std::string &key, double threshold) {
    Json entry = {{"dense_seconds", 1.0},   {"event_seconds", 1.0},
                  {"event_seconds_without_spikes", 0.5}, {"density", threshold},
                  {"threshold", threshold}};
    Json document = {{"format", "spikemesh-kernel-crossovers"},
                     {"version", 1},
                     {"machines", {{kernelMachineName(), {{key, entry}}}}}};
    std::ofstream(path) << document.dump();
    useKernelCrossoversFile(path);
  }
  std::filesystem::path dir;
  std::string path;
};

KernelCrossover timing() {
  KernelCrossover c;
  c.denseSeconds = 10, c.fixedSeconds = 2, c.eventSeconds = 18, c.density = 0.5;
  return c;
}

const EventKernelLayer *layerOf(const std::string &key) {
  static EventKernelLayer found;
  for (const EventKernelLayer &layer : eventKernelLayers())
    if (layer.key == key) {
      found = layer;
      return &found;
    }
  return nullptr;
}

/// Spikes [rows, cols] with `density` of them ones, exactly.
at::Tensor spikes(int64_t rows, int64_t cols, double density) {
  at::Tensor flat = at::zeros({rows * cols});
  flat.index_put_({at::randperm(rows * cols).slice(0, 0, int64_t(density * rows * cols))}, 1.0);
  return flat.view({rows, cols});
}

} // namespace

TEST(EventKernelChoice, CrossoverOfALinearCostModel) {
  // dense 10; event 2 + 32 d, measured 18 at d = 0.5: equal at d = 0.25.
  EXPECT_DOUBLE_EQ(crossoverDensity(10, 2, 18, 0.5), 0.25);
  // A fixed cost above the dense time: never event-driven.
  EXPECT_EQ(crossoverDensity(10, 12, 30, 0.5), 0.0);
  // No growth with the density, or growth too slow to reach the dense time: always.
  EXPECT_EQ(crossoverDensity(10, 2, 2, 0.5), 1.0);
  EXPECT_EQ(crossoverDensity(10, 2, 3, 0.5), 1.0);
  // Measured on no spikes at all: the slope is unknown, the fixed cost decides.
  EXPECT_EQ(crossoverDensity(10, 2, 2, 0.0), 1.0);
}

TEST(EventKernelChoice, WithoutAFileEachShapeIsMeasuredOncePerProcess) {
  useKernelCrossoversFile("");
  int calls = 0;
  auto measure = [&] {
    ++calls;
    return timing();
  };
  EXPECT_FALSE(rememberedThreshold("test shape A").has_value());
  EXPECT_DOUBLE_EQ(measuredThreshold("test shape A", measure), 0.25);
  EXPECT_DOUBLE_EQ(measuredThreshold("test shape A", measure), 0.25);
  EXPECT_EQ(calls, 1);
  EXPECT_DOUBLE_EQ(rememberedThreshold("test shape A").value(), 0.25);
  ASSERT_NE(layerOf("test shape A"), nullptr);
  EXPECT_FALSE(layerOf("test shape A")->fromFile);
  // A new process (here: the memory cleared) measures again.
  useKernelCrossoversFile("");
  EXPECT_DOUBLE_EQ(measuredThreshold("test shape A", measure), 0.25);
  EXPECT_EQ(calls, 2);
}

TEST_F(CrossoverFile, ALaterProcessReadsTheFileInsteadOfTiming) {
  int calls = 0;
  auto measure = [&] {
    ++calls;
    return timing();
  };
  EXPECT_DOUBLE_EQ(measuredThreshold("shape B", measure), 0.25);
  EXPECT_EQ(calls, 1);
  Json document = read();
  EXPECT_EQ(document["format"], "spikemesh-kernel-crossovers");
  const Json &entry = document["machines"][kernelMachineName()]["shape B"];
  EXPECT_DOUBLE_EQ(entry["threshold"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(entry["dense_seconds"].get<double>(), 10.0);
  useKernelCrossoversFile(path);
  auto other = [&] {
    ++calls;
    KernelCrossover c = timing();
    c.denseSeconds = 100; // a timing that would cross elsewhere
    return c;
  };
  EXPECT_DOUBLE_EQ(measuredThreshold("shape B", other), 0.25);
  EXPECT_EQ(calls, 1);
  ASSERT_NE(layerOf("shape B"), nullptr);
  EXPECT_TRUE(layerOf("shape B")->fromFile);
}

TEST_F(CrossoverFile, OtherMachinesEntriesAreKeptAndNotUsed) {
  Json document = {{"format", "spikemesh-kernel-crossovers"},
                   {"version", 1},
                   {"machines",
                    {{"another CPU", {{"shape C", {{"dense_seconds", 1.0},
                                                   {"event_seconds", 1.0},
                                                   {"event_seconds_without_spikes", 0.1},
                                                   {"density", 0.5},
                                                   {"threshold", 0.9}}}}}}}};
  std::ofstream(path) << document.dump();
  EXPECT_DOUBLE_EQ(measuredThreshold("shape C", timing), 0.25);
  Json after = read();
  EXPECT_DOUBLE_EQ(after["machines"]["another CPU"]["shape C"]["threshold"].get<double>(), 0.9);
  EXPECT_DOUBLE_EQ(after["machines"][kernelMachineName()]["shape C"]["threshold"].get<double>(),
                   0.25);
}

TEST_F(CrossoverFile, AMalformedFileIsReplaced) {
  std::ofstream(path) << "{ not json";
  ::testing::internal::CaptureStderr();
  EXPECT_DOUBLE_EQ(measuredThreshold("shape D", timing), 0.25);
  std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("is not a kernel crossover file"), std::string::npos) << warning;
  EXPECT_DOUBLE_EQ(read()["machines"][kernelMachineName()]["shape D"]["threshold"].get<double>(),
                   0.25);
}

TEST_F(CrossoverFile, AnUnwritablePlaceLeavesTheTimingToTheProcess) {
  std::ofstream(dir / "file") << "x";
  useKernelCrossoversFile((dir / "file" / "kernel-crossovers.json").string());
  ::testing::internal::CaptureStderr();
  EXPECT_DOUBLE_EQ(measuredThreshold("shape E", timing), 0.25);
  std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("this process times its own kernel crossovers"), std::string::npos)
      << warning;
}

TEST_F(CrossoverFile, ALinearSwitchesKernelsAsItsDensityCrossesTheCrossover) {
  at::manual_seed(5);
  preset("linear [24, 96] -> 16", 0.3);
  Node node;
  node.name = "fc";
  node.opType = "linear";
  node.domain = "spikemesh";
  node.outputs = {"y"};
  Kernel kernel = OpRegistry::builtin().lookup("linear")->build(node);
  at::Tensor weight = at::randn({16, 96}), bias = at::randn({16});
  auto check = [&](double density, int64_t event, int64_t dense) {
    at::Tensor x = spikes(24, 96, density);
    at::Tensor y = kernel({x.view({2, 12, 96}), weight, bias}, RunContext{}).view({24, 16});
    at::Tensor expected = at::linear(x.to(at::kDouble), weight.to(at::kDouble),
                                     bias.to(at::kDouble));
    // Each output sums 96 products and a bias: within 97 float32 roundings of its
    // absolute terms.
    at::Tensor scale = at::linear(x.to(at::kDouble), weight.abs().to(at::kDouble),
                                  bias.abs().to(at::kDouble));
    double eps = std::numeric_limits<float>::epsilon();
    EXPECT_TRUE(((y.to(at::kDouble) - expected).abs() <= 97 * eps * scale).all().item<bool>());
    const EventKernelLayer *layer = layerOf("linear [24, 96] -> 16");
    ASSERT_NE(layer, nullptr);
    EXPECT_TRUE(layer->fromFile);
    EXPECT_EQ(layer->eventCalls, event);
    EXPECT_EQ(layer->denseCalls, dense);
  };
  check(0.1, 1, 0);
  check(0.5, 1, 1);
  check(0.25, 2, 1);
  const EventKernelLayer *layer = layerOf("linear [24, 96] -> 16");
  EXPECT_NEAR(layer->meanDensity(), (0.1 + 0.5 + 0.25) / 3, 1e-3);
  // Not spikes: dense, not counted under the shape.
  kernel({at::rand({2, 12, 96}), weight, bias}, RunContext{});
  EXPECT_EQ(layerOf("linear [24, 96] -> 16")->denseCalls, 1);
}

TEST_F(CrossoverFile, AConvSwitchesKernelsAsItsDensityCrossesTheCrossover) {
  at::manual_seed(6);
  SpikeConvGeometry geometry{{1, 1}, {1, 1}, {1, 1}};
  at::Tensor weight = at::randn({8, 4, 3, 3}), bias = at::randn({8});
  auto input = [](double density) { return spikes(6, 4 * 5 * 5, density).view({6, 4, 5, 5}); };
  // The key as the choice builds it: measure once without a file to learn it.
  useKernelCrossoversFile("");
  EXPECT_NE(convEventKernelUse(input(0.2), weight, bias, geometry, false),
            EventKernelUse::NotSpikes);
  ASSERT_EQ(eventKernelLayers().size(), 1u);
  std::string key = eventKernelLayers()[0].key;
  EXPECT_NE(key.find("conv2d [6, 4, 5, 5] -> [8, 4, 3, 3] stride 1x1 padding 1x1"),
            std::string::npos)
      << key;
  preset(key, 0.25);
  EXPECT_EQ(convEventKernelUse(input(0.1), weight, bias, geometry, false), EventKernelUse::Event);
  EXPECT_EQ(convEventKernelUse(input(0.6), weight, bias, geometry, false), EventKernelUse::Dense);
  // At the crossover itself (150 of 600 ones): event-driven.
  EXPECT_EQ(convEventKernelUse(input(0.25), weight, bias, geometry, false), EventKernelUse::Event);
  EXPECT_EQ(convEventKernelUse(at::rand({6, 4, 5, 5}), weight, bias, geometry, false),
            EventKernelUse::NotSpikes);
  const EventKernelLayer *layer = layerOf(key);
  ASSERT_NE(layer, nullptr);
  EXPECT_TRUE(layer->fromFile);
  EXPECT_EQ(layer->eventCalls, 2);
  EXPECT_EQ(layer->denseCalls, 1);
}
