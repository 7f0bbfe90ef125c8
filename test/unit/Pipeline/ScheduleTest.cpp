//===- ScheduleTest.cpp - Pipeline schedules, simulated -------------------===//
//
// Every schedule for many (S, V, M), split or not, run in the discrete-event
// simulation with unit costs: complete, deadlock-free, every dependency
// honoured (checked again here from the simulated times), each stage's
// forwards, backwards and weight gradients in microbatch order (gradients
// accumulate as in one process). The bubbles match the closed forms where
// there are ones, and zero_bubble's is below 1F1B's.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include "snn/Runtime/Pipeline/ScheduleSimulation.h"

#include <gtest/gtest.h>

#include <map>

using namespace snn::runtime;
using snn::schema::PipelineSchedule;
using snn::test::errorOf;

namespace {

const PipelineSchedule kSchedules[] = {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB,
                                       PipelineSchedule::Interleaved1F1B,
                                       PipelineSchedule::ZeroBubble};

bool runnable(const ScheduleConfig &c) {
  bool interleaved = c.schedule == PipelineSchedule::Interleaved1F1B ||
                     c.schedule == PipelineSchedule::ZeroBubble;
  if (c.schedule == PipelineSchedule::OneFOneB && c.virtualStages > 1)
    return false;
  return !(interleaved && c.virtualStages > 1 && c.microbatches % c.ranks != 0);
}

std::string label(const ScheduleConfig &c) {
  return std::string(snn::schema::nameOf(c.schedule)) + " S=" + std::to_string(c.ranks) +
         " V=" + std::to_string(c.virtualStages) + " M=" + std::to_string(c.microbatches) +
         (c.delayWeightGrad ? " delay_wgrad" : "");
}

/// From the simulated times alone: every action starts after what it needs
/// ends, and one rank never runs two actions at once.
void expectDependenciesHonoured(const ScheduleConfig &c,
                                const std::vector<std::vector<Action>> &ranks,
                                const ScheduleSimulation &sim) {
  std::map<std::tuple<int, int64_t, int64_t>, double> finish;
  for (size_t r = 0; r < ranks.size(); ++r)
    for (size_t i = 0; i < ranks[r].size(); ++i) {
      const Action &a = ranks[r][i];
      finish[{int(a.kind), a.stage, a.microbatch}] = sim.finish[r][i];
      if (i > 0)
        EXPECT_GE(sim.start[r][i], sim.finish[r][i - 1]) << label(c);
    }
  for (size_t r = 0; r < ranks.size(); ++r)
    for (size_t i = 0; i < ranks[r].size(); ++i)
      for (const Action &d : actionDependencies(ranks[r][i], c.stageCount()))
        EXPECT_GE(sim.start[r][i], (finish[{int(d.kind), d.stage, d.microbatch}]))
            << label(c) << ": " << describeAction(ranks[r][i]) << " before "
            << describeAction(d);
}

/// Per stage and kind, microbatches in increasing order.
void expectMicrobatchOrder(const ScheduleConfig &c,
                           const std::vector<std::vector<Action>> &ranks) {
  for (const auto &order : ranks) {
    std::map<std::pair<int, int64_t>, int64_t> last;
    for (const Action &a : order) {
      auto key = std::make_pair(int(a.kind), a.stage);
      auto it = last.find(key);
      if (it != last.end())
        EXPECT_LT(it->second, a.microbatch) << label(c) << ": " << describeAction(a);
      last[key] = a.microbatch;
    }
  }
}

/// Microbatches whose activations a rank holds at once (forward started,
/// last backward part not done).
int64_t peakInFlight(const std::vector<Action> &order, bool split) {
  int64_t held = 0, peak = 0;
  for (const Action &a : order) {
    held += a.kind == ActionKind::Forward;
    peak = std::max(peak, held);
    bool frees = split ? a.kind == ActionKind::WeightGrad : a.kind == ActionKind::Backward;
    held -= frees;
  }
  return peak;
}

ScheduleSimulation simulate(PipelineSchedule schedule, int64_t S, int64_t V, int64_t M,
                            bool delay = false) {
  ScheduleConfig c{schedule, S, V, M, delay};
  return simulateSchedule(c, buildSchedule(c));
}

} // namespace

TEST(Schedule, EveryScheduleRunsCompletelyInOrderWithoutDeadlock) {
  int simulated = 0;
  for (PipelineSchedule schedule : kSchedules)
    for (int64_t S : {1, 2, 3, 4})
      for (int64_t V : {1, 2, 3})
        for (int64_t M : {1, 2, 3, 4, 6, 8})
          for (bool delay : {false, true}) {
            ScheduleConfig c{schedule, S, V, M, delay};
            if (!runnable(c)) {
              EXPECT_FALSE(errorOf([&] { buildSchedule(c); }).empty()) << label(c);
              continue;
            }
            std::vector<std::vector<Action>> ranks = buildSchedule(c);
            ScheduleSimulation sim = simulateSchedule(c, ranks); // throws on deadlock
            expectDependenciesHonoured(c, ranks, sim);
            expectMicrobatchOrder(c, ranks);
            EXPECT_GE(sim.bubbleFraction(), 0.0) << label(c);
            EXPECT_LT(sim.bubbleFraction(), 1.0) << label(c);
            ++simulated;
          }
  EXPECT_EQ(simulated, 400);
}

TEST(Schedule, UnsplitBubblesMatchTheClosedForms) {
  // GPipe and 1F1B: (S - 1) / (M + S - 1); interleaved over V chunks:
  // (S - 1) / (V M + S - 1) (Megatron-LM), with F = 1 and B = 2.
  for (int64_t S : {2, 3, 4})
    for (int64_t M : {1, 2, 4, 8, 12}) {
      double classic = double(S - 1) / double(M + S - 1);
      EXPECT_DOUBLE_EQ(simulate(PipelineSchedule::GPipe, S, 1, M).bubbleFraction(), classic);
      EXPECT_DOUBLE_EQ(simulate(PipelineSchedule::OneFOneB, S, 1, M).bubbleFraction(),
                       classic);
      for (int64_t V : {2, 3}) {
        if (M % S != 0)
          continue;
        EXPECT_DOUBLE_EQ(
            simulate(PipelineSchedule::Interleaved1F1B, S, V, M).bubbleFraction(),
            double(S - 1) / double(V * M + S - 1))
            << "S=" << S << " V=" << V << " M=" << M;
      }
    }
}

TEST(Schedule, ZeroBubbleFillsTheCooldownWithWeightGradients) {
  for (int64_t S : {2, 4, 8})
    for (int64_t V : {1, 2})
      for (int64_t M : {2 * S, 4 * S}) {
        std::string what = "S=" + std::to_string(S) + " V=" + std::to_string(V) +
                           " M=" + std::to_string(M);
        double zb = simulate(PipelineSchedule::ZeroBubble, S, V, M).bubbleFraction();
        double unsplit =
            simulate(PipelineSchedule::Interleaved1F1B, S, V, M).bubbleFraction();
        // ZB-H1's bound: each rank waits (S - 1) units of 3 V M.
        double ideal = double(S - 1) / double(3 * V * M + S - 1);
        EXPECT_LT(zb, unsplit) << what;
        EXPECT_GE(zb, ideal - 1e-12) << what;
        if (S == 2)
          EXPECT_DOUBLE_EQ(zb, ideal) << what;
        // At most one microbatch more in memory than the unsplit order.
        ScheduleConfig z{PipelineSchedule::ZeroBubble, S, V, M, false};
        ScheduleConfig u{PipelineSchedule::Interleaved1F1B, S, V, M, false};
        auto split = buildSchedule(z), plain = buildSchedule(u);
        for (size_t r = 0; r < split.size(); ++r)
          EXPECT_LE(peakInFlight(split[r], true), peakInFlight(plain[r], false) + 1)
              << what << " rank " << r;
      }
  // S=4, M=8: 1F1B waits 27% of the time, the split backward 17%.
  EXPECT_NEAR(simulate(PipelineSchedule::OneFOneB, 4, 1, 8).bubbleFraction(), 9.0 / 33, 1e-12);
  EXPECT_NEAR(simulate(PipelineSchedule::ZeroBubble, 4, 1, 8).bubbleFraction(), 5.0 / 29, 1e-12);
  // pp_delay_wgrad on GPipe: the W's wait for the bubbles of the backward.
  EXPECT_LT(simulate(PipelineSchedule::GPipe, 4, 1, 8, true).bubbleFraction(),
            simulate(PipelineSchedule::GPipe, 4, 1, 8).bubbleFraction());
}

namespace {

std::vector<std::string> describe(const std::vector<Action> &order) {
  std::vector<std::string> text;
  for (const Action &a : order)
    text.push_back(describeAction(a));
  return text;
}

} // namespace

TEST(Schedule, KnownOrders) {
  // 1F1B, S = 4: rank 0 warms up with S - 1 = 3 forwards, then alternates.
  auto oneF = buildSchedule({PipelineSchedule::OneFOneB, 4, 1, 6, false});
  EXPECT_EQ(describe(oneF[0]),
            (std::vector<std::string>{"F s0 m0", "F s0 m1", "F s0 m2", "F s0 m3", "B s0 m0",
                                      "F s0 m4", "B s0 m1", "F s0 m5", "B s0 m2", "B s0 m3",
                                      "B s0 m4", "B s0 m5"}));
  EXPECT_EQ(describe(oneF[3]),
            (std::vector<std::string>{"F s3 m0", "B s3 m0", "F s3 m1", "B s3 m1", "F s3 m2",
                                      "B s3 m2", "F s3 m3", "B s3 m3", "F s3 m4", "B s3 m4",
                                      "F s3 m5", "B s3 m5"}));
  // Megatron-LM's interleaved order, S = 2, V = 2, M = 4: rank 0 warms up
  // with 2 (S - 1) + (V - 1) S = 4 forwards; chunks switch every S units.
  auto inter = buildSchedule({PipelineSchedule::Interleaved1F1B, 2, 2, 4, false});
  EXPECT_EQ(describe(inter[0]),
            (std::vector<std::string>{"F s0 m0", "F s0 m1", "F s2 m0", "F s2 m1", "F s0 m2",
                                      "B s2 m0", "F s0 m3", "B s2 m1", "F s2 m2", "B s0 m0",
                                      "F s2 m3", "B s0 m1", "B s2 m2", "B s2 m3", "B s0 m2",
                                      "B s0 m3"}));
  auto gpipe = buildSchedule({PipelineSchedule::GPipe, 2, 1, 3, true});
  EXPECT_EQ(describe(gpipe[1]),
            (std::vector<std::string>{"F s1 m0", "F s1 m1", "F s1 m2", "B s1 m0", "B s1 m1",
                                      "B s1 m2", "W s1 m0", "W s1 m1", "W s1 m2"}));
  // Zero bubble, S = 2: rank 0 holds one W back while F's and B's are
  // ready, runs W's where it would wait for rank 1's B, and in microbatch
  // order.
  auto zb = buildSchedule({PipelineSchedule::ZeroBubble, 2, 1, 4, false});
  EXPECT_EQ(describe(zb[0]),
            (std::vector<std::string>{"F s0 m0", "F s0 m1", "B s0 m0", "F s0 m2", "B s0 m1",
                                      "W s0 m0", "F s0 m3", "B s0 m2", "W s0 m1", "W s0 m2",
                                      "B s0 m3", "W s0 m3"}));
}

TEST(Schedule, PlansASchedulesCannotRunAreRefused) {
  EXPECT_NE(errorOf([] { buildSchedule({PipelineSchedule::OneFOneB, 2, 2, 4, false}); })
                .find("1f1b runs one stage per rank, but the plan has 2 virtual stages"),
            std::string::npos);
  EXPECT_NE(errorOf([] { buildSchedule({PipelineSchedule::ZeroBubble, 4, 2, 6, false}); })
                .find("needs pp_microbatches divisible by the pp size 4, got 6"),
            std::string::npos);
  EXPECT_NE(errorOf([] { buildSchedule({PipelineSchedule::GPipe, 2, 1, 0, false}); })
                .find("must all be at least 1"),
            std::string::npos);
}

TEST(Schedule, TheSimulationFindsDeadlocksAndMissingActions) {
  ScheduleConfig c{PipelineSchedule::GPipe, 2, 1, 2, false};
  using K = ActionKind;
  // Rank 1 wants microbatch 1 before 0, while rank 0 waits for 0's backward.
  std::vector<std::vector<Action>> bad = {
      {{K::Forward, 0, 0}, {K::Backward, 0, 0}, {K::Forward, 0, 1}, {K::Backward, 0, 1}},
      {{K::Forward, 1, 1}, {K::Forward, 1, 0}, {K::Backward, 1, 0}, {K::Backward, 1, 1}}};
  EXPECT_EQ(errorOf([&] { simulateSchedule(c, bad); }),
            "pipeline schedule deadlocks: rank 0 waits at B s0 m0 for B s1 m0, rank 1 "
            "waits at F s1 m1 for F s0 m1");
  bad[1].pop_back();
  EXPECT_NE(errorOf([&] { simulateSchedule(c, bad); }).find("7 actions, expected 8"),
            std::string::npos);
  bad[1].push_back({K::Backward, 0, 1});
  EXPECT_NE(errorOf([&] { simulateSchedule(c, bad); })
                .find("rank 1 runs B s0 m1, which is not its to run"),
            std::string::npos);
}
