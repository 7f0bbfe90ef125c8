//===- EventKernelChoiceTest.cpp - Event-driven or dense, measured --------===//
//
// The crossover arithmetic, the per-shape memory of measurements, and the
// Linear measurement's refusal of inputs that are not spikes. (Which kernel
// wins depends on this machine: the e2e test checks the measured thresholds
// lie in [0, 1] and the outputs stay PyTorch's either way.)
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Execution/EventKernelChoice.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

using namespace snn::runtime;

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

TEST(EventKernelChoice, EachShapeIsMeasuredOnce) {
  int calls = 0;
  auto measure = [&] {
    ++calls;
    KernelCrossover c;
    c.denseSeconds = 10, c.fixedSeconds = 2, c.eventSeconds = 18, c.density = 0.5;
    return c;
  };
  size_t before = measuredCrossovers().size();
  EXPECT_FALSE(rememberedThreshold("test shape A").has_value());
  EXPECT_DOUBLE_EQ(measuredThreshold("test shape A", measure), 0.25);
  EXPECT_DOUBLE_EQ(measuredThreshold("test shape A", measure), 0.25);
  EXPECT_EQ(calls, 1);
  EXPECT_DOUBLE_EQ(rememberedThreshold("test shape A").value(), 0.25);
  std::vector<std::pair<std::string, KernelCrossover>> all = measuredCrossovers();
  ASSERT_EQ(all.size(), before + 1);
  EXPECT_EQ(all.back().first, "test shape A");
  EXPECT_DOUBLE_EQ(all.back().second.threshold, 0.25);
}

TEST(EventKernelChoice, LinearMeasuresOnItsFirstSpikeInput) {
  at::manual_seed(5);
  at::Tensor weight = at::randn({16, 96}), bias = at::randn({16});
  size_t before = measuredCrossovers().size();
  // Not spikes: dense, nothing remembered (a later spike input measures).
  EXPECT_EQ(linearEventThreshold(at::rand({24, 96}), weight, bias), 0.0);
  EXPECT_EQ(measuredCrossovers().size(), before);
  at::Tensor spikes = (at::rand({24, 96}) < 0.2).to(at::kFloat);
  double threshold = linearEventThreshold(spikes, weight, bias);
  EXPECT_GE(threshold, 0.0);
  EXPECT_LE(threshold, 1.0);
  std::vector<std::pair<std::string, KernelCrossover>> all = measuredCrossovers();
  ASSERT_EQ(all.size(), before + 1);
  const KernelCrossover &c = all.back().second;
  EXPECT_NEAR(c.density, spikes.to(at::kDouble).mean().item<double>(), 1e-12);
  EXPECT_GT(c.denseSeconds, 0.0);
  EXPECT_GT(c.eventSeconds, 0.0);
  // The same shape again, even denser: the remembered crossover.
  EXPECT_EQ(linearEventThreshold(at::ones({24, 96}), weight, bias), threshold);
  EXPECT_EQ(measuredCrossovers().size(), before + 1);
}
