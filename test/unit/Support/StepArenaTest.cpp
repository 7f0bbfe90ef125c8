//===- StepArenaTest.cpp - A training step's large tensors laid out once --===//
#include "snn/Runtime/Support/StepArena.h"
#include "snn/Runtime/Support/TensorMemory.h"

#include <ATen/ATen.h>

#include <gtest/gtest.h>

#include <random>

using snn::runtime::layOutStep;
using snn::runtime::StepAllocation;
using snn::runtime::StepArena;
using snn::runtime::StepLayout;
using snn::runtime::TensorMemory;

namespace {

bool aliveTogether(const StepAllocation &a, const StepAllocation &b) {
  return a.allocated < b.freed && b.allocated < a.freed;
}

/// Every two allocations alive at the same time have disjoint bytes inside the layout.
void expectNoSharedBytes(const std::vector<StepAllocation> &steps, const StepLayout &layout,
                         size_t alignment) {
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].freed < 0) {
      EXPECT_EQ(layout.offsets[i], -1) << i;
      continue;
    }
    ASSERT_GE(layout.offsets[i], 0) << i;
    EXPECT_EQ(size_t(layout.offsets[i]) % alignment, 0u) << i;
    EXPECT_LE(size_t(layout.offsets[i]) + steps[i].bytes, layout.bytes) << i;
    for (size_t j = 0; j < i; ++j) {
      if (steps[j].freed < 0 || !aliveTogether(steps[i], steps[j]))
        continue;
      int64_t a = layout.offsets[i], b = layout.offsets[j];
      bool disjoint = a + int64_t(steps[i].bytes) <= b || b + int64_t(steps[j].bytes) <= a;
      EXPECT_TRUE(disjoint) << i << " and " << j;
    }
  }
}

} // namespace

TEST(StepArena, LayoutReusesTheBytesOfTensorsThatAreGone) {
  // A and B alive together; C after both, D alive past the step's end.
  std::vector<StepAllocation> steps{{1000, 0, 3}, {600, 1, 2}, {1500, 4, 5}, {4000, 6, -1}};
  StepLayout layout = layOutStep(steps, 64);
  expectNoSharedBytes(steps, layout, 64);
  EXPECT_EQ(layout.offsets[2], 0); // C takes the bytes A and B had
  EXPECT_EQ(layout.offsets[3], -1);
  // The largest alive at once: A (1024 rounded) and B side by side, or C alone.
  EXPECT_EQ(layout.bytes, 1664u);
}

TEST(StepArena, RandomStepsNeverShareBytesBetweenLiveTensors) {
  std::mt19937 random(11);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<StepAllocation> steps;
    std::vector<size_t> alive;
    int64_t clock = 0;
    for (int event = 0; event < 120; ++event) {
      if (!alive.empty() && random() % 2) {
        size_t k = random() % alive.size();
        steps[alive[k]].freed = clock++;
        alive.erase(alive.begin() + int64_t(k));
      } else {
        alive.push_back(steps.size());
        steps.push_back({size_t(1 + random() % 5000), clock++, -1});
      }
    }
    StepLayout layout = layOutStep(steps, 64);
    expectNoSharedBytes(steps, layout, 64);
    size_t total = 0;
    for (const StepAllocation &a : steps)
      total += a.freed >= 0 ? (a.bytes + 63) / 64 * 64 : 0;
    EXPECT_LE(layout.bytes, total);
  }
}

namespace {

/// One "step": two large tensors alive together, then a third after the first is gone,
/// filled with `base` + 1, 2 and 3; returns their data pointers.
std::vector<const void *> oneStep(float base = 0, std::vector<at::Tensor> *keep = nullptr) {
  constexpr float n = float(1 << 16);
  at::Tensor a = at::full({1 << 16}, base + 1); // 256 KiB each, large under 64 KiB
  at::Tensor b = at::full({1 << 16}, base + 2);
  std::vector<const void *> pointers{a.data_ptr(), b.data_ptr()};
  EXPECT_EQ(a.sum().item<float>(), (base + 1) * n);
  a = at::Tensor();
  at::Tensor c = at::full({1 << 16}, base + 3);
  pointers.push_back(c.data_ptr());
  EXPECT_EQ(b.sum().item<float>(), (base + 2) * n);
  EXPECT_EQ(c.sum().item<float>(), (base + 3) * n);
  if (keep)
    keep->push_back(b);
  return pointers;
}

/// A training run's first two steps: the first also makes state that stays (as an
/// optimizer's), the second is as every later one. The arena lays the steps out once
/// (after the second, or after the first where an earlier test's steps differed).
void firstTwoSteps(float base = 0) {
  static std::vector<at::Tensor> state;
  StepArena::beginStep();
  oneStep(base);
  state.push_back(at::zeros({3 << 15}));
  StepArena::endStep();
  StepArena::beginStep();
  oneStep(base);
  StepArena::endStep();
}

} // namespace

TEST(StepArena, ServesTheRecordedStepsTensorsAtTheirPlaces) {
  StepArena::install(64 << 10);
  TensorMemory::install(); // the arena under the counting allocator, as snn-run has it
  ASSERT_TRUE(StepArena::installed());
  StepArena::Stats before = StepArena::stats(); // counts since install, which is once a process
  firstTwoSteps(5);
  StepArena::Stats recorded = StepArena::stats();
  EXPECT_EQ(recorded.layouts, before.layouts + 1);
  EXPECT_EQ(recorded.servedInArena, before.servedInArena);
  // a and b side by side, c where a was
  EXPECT_EQ(recorded.arenaBytes, 2 * (1 << 18));
  std::vector<std::vector<const void *>> places;
  for (int step = 0; step < 3; ++step) {
    StepArena::beginStep();
    places.push_back(oneStep());
    StepArena::endStep();
  }
  StepArena::Stats replayed = StepArena::stats();
  EXPECT_EQ(replayed.servedInArena, recorded.servedInArena + 9);
  EXPECT_EQ(replayed.ownMappings, recorded.ownMappings);
  EXPECT_EQ(replayed.layouts, recorded.layouts);
  for (const auto &step : places) {
    EXPECT_EQ(step, places.front());
    EXPECT_EQ(step[2], step[0]); // c reuses a's bytes
  }
}

TEST(StepArena, ATensorKeptPastItsStepKeepsItsBytes) {
  StepArena::install(64 << 10);
  firstTwoSteps();
  int64_t layouts = StepArena::stats().layouts;
  std::vector<at::Tensor> kept;
  StepArena::beginStep();
  oneStep(0, &kept); // b outlives the step
  StepArena::endStep();
  int64_t ownBefore = StepArena::stats().ownMappings;
  // The next step's b has b's place, which the kept tensor holds: it gets its own mapping,
  // and neither tensor sees the other's values (oneStep checks its own sums).
  StepArena::beginStep();
  oneStep(10);
  StepArena::endStep();
  EXPECT_EQ(StepArena::stats().ownMappings, ownBefore + 1);
  EXPECT_EQ(kept[0].sum().item<float>(), 2.0f * float(1 << 16));
  // That step differed from the layout: it is laid out again, and the one after fits it.
  EXPECT_EQ(StepArena::stats().layouts, layouts + 1);
  int64_t served = StepArena::stats().servedInArena;
  StepArena::beginStep();
  oneStep();
  StepArena::endStep();
  EXPECT_EQ(StepArena::stats().servedInArena, served + 3);
}

TEST(StepArena, OutsideAStepTensorsComeFromTheHeap) {
  StepArena::install(64 << 10);
  StepArena::Stats before = StepArena::stats();
  at::Tensor small = at::ones({16});
  at::Tensor large = at::full({1 << 16}, 5.0f);
  EXPECT_EQ(StepArena::stats().servedInArena, before.servedInArena);
  EXPECT_EQ(StepArena::stats().ownMappings, before.ownMappings);
  EXPECT_EQ(large.sum().item<float>(), 5.0f * float(1 << 16));
  EXPECT_EQ(small.sum().item<float>(), 16.0f);
}

TEST(StepArena, ATensorCarriedIntoTheNextStepHandsItsMappingOn) {
  // As a weight's gradient: set to none at the step's start, allocated again in its backward.
  StepArena::install(64 << 10);
  at::Tensor carried;
  std::vector<const void *> places;
  for (int step = 0; step < 4; ++step) {
    StepArena::beginStep();
    carried = at::Tensor();
    oneStep(float(step));
    carried = at::empty({1 << 17});
    // The mapping its predecessor had, pages and all (a new one reads zeros).
    if (step > 0)
      EXPECT_EQ(carried[17].item<float>(), float(step - 1) + 0.5f) << step;
    carried.fill_(float(step) + 0.5f);
    places.push_back(carried.data_ptr());
    StepArena::endStep();
  }
  for (const void *place : places)
    EXPECT_EQ(place, places.front());
  EXPECT_EQ(carried.sum().item<float>(), 3.5f * float(1 << 17));
}
