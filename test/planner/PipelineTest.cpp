// Pipeline helpers: the reference package's examples and rules, stage layouts and units.
#include "snn/Planner/Pipeline.h"
#include "snn/Planner/PipelineUnits.h"

#include "TestModels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

using namespace snn::planner;

TEST(Microbatches, ReferenceExamples) {
  EXPECT_EQ(*recommendedPipelineMicrobatches(8, 8), 8);
  EXPECT_EQ(*recommendedPipelineMicrobatches(128, 2), 8);
  auto none = recommendedPipelineMicrobatches(37, 8);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message,
            "no microbatch count in [8, 32] divides batch size 37 for 8 pipeline stages");
}

TEST(Microbatches, Rules) {
  EXPECT_EQ(*recommendedPipelineMicrobatches(12, 4), 12); // [4, 12]: 12 divides 12
  EXPECT_EQ(*recommendedPipelineMicrobatches(30, 4), 15); // [4, 16]: largest divisor 15
  EXPECT_FALSE(recommendedPipelineMicrobatches(4, 8).ok()); // B < S
  EXPECT_FALSE(recommendedPipelineMicrobatches(4, 0).ok()); // S must be positive
  EXPECT_FALSE(recommendedPipelineMicrobatches(4, -1).ok());
}

TEST(MemoptStages, CostliestSortedTiesToLowerIndex) {
  EXPECT_EQ(*recommendPipelineMemoptStages({1, 5, 3, 5}), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(*recommendPipelineMemoptStages({2, 2, 2, 2}, 0.5), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(*recommendPipelineMemoptStages({4, 1, 9}, 1.0), (std::vector<int64_t>{0, 1, 2}));
  // At least one stage.
  EXPECT_EQ(*recommendPipelineMemoptStages({4, 1, 9}, 0.01), (std::vector<int64_t>{2}));
  // round(5 * 0.5) = round(2.5) = 2, half to even as in Python.
  EXPECT_EQ(recommendPipelineMemoptStages({1, 2, 3, 4, 5}, 0.5)->size(), 2u);
  EXPECT_EQ(recommendPipelineMemoptStages({1, 2, 3, 4, 5, 6, 7}, 0.5)->size(), 4u); // 3.5 -> 4
}

TEST(MemoptStages, RatioOutOfRange) {
  for (double ratio : {0.0, -0.5, 1.5, std::numeric_limits<double>::infinity(),
                       std::numeric_limits<double>::quiet_NaN()}) {
    auto r = recommendPipelineMemoptStages({1, 2}, ratio);
    ASSERT_FALSE(r.ok()) << ratio;
    EXPECT_NE(r.error().message.find("must be finite and in (0, 1]"), std::string::npos);
  }
  EXPECT_FALSE(recommendPipelineMemoptStages({}, 0.5).ok());
}

TEST(StageLayout, Balanced) {
  EXPECT_EQ(balancedStageLayout({1, 1, 1, 1, 4}, 2), (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(balancedStageLayout({5, 1, 1, 1, 1, 1}, 2), (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(balancedStageLayout({1, 1, 1}, 3), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_TRUE(balancedStageLayout({1, 1}, 3).empty());
}

/// Largest stage sum of `counts` over `costs`.
static double maxStage(const std::vector<double> &costs, const std::vector<int64_t> &counts) {
  double worst = 0;
  size_t next = 0;
  for (int64_t c : counts) {
    double sum = 0;
    for (int64_t i = 0; i < c; ++i)
      sum += costs[next++];
    worst = std::max(worst, sum);
  }
  return worst;
}

/// Brute force over all contiguous partitions into non-empty stages.
static double bruteForce(const std::vector<double> &costs, size_t from, int64_t stages) {
  if (stages == 1) {
    double sum = 0;
    for (size_t i = from; i < costs.size(); ++i)
      sum += costs[i];
    return sum;
  }
  double best = std::numeric_limits<double>::infinity(), sum = 0;
  for (size_t end = from + 1; end + stages - 1 <= costs.size(); ++end) {
    sum += costs[end - 1];
    best = std::min(best, std::max(sum, bruteForce(costs, end, stages - 1)));
  }
  return best;
}

TEST(StageLayout, MatchesBruteForceOptimum) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> cost(1, 20), count(1, 9);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<double> costs(size_t(count(rng)));
    for (double &c : costs)
      c = cost(rng);
    for (int64_t stages = 1; stages <= int64_t(costs.size()); ++stages) {
      std::vector<int64_t> layout = balancedStageLayout(costs, stages);
      ASSERT_EQ(int64_t(layout.size()), stages);
      EXPECT_TRUE(std::all_of(layout.begin(), layout.end(), [](int64_t c) { return c > 0; }));
      EXPECT_DOUBLE_EQ(maxStage(costs, layout), bruteForce(costs, 0, stages));
    }
  }
}

TEST(StageLayout, ExplicitOverride) {
  EXPECT_EQ(*parseStageLayout("2|0|3", 3, 5), (std::vector<int64_t>{2, 0, 3}));
  EXPECT_EQ(formatStageLayout({2, 0, 3}), "2|0|3");
  EXPECT_EQ(parseStageLayout("2|3", 3, 5).error().message,
            "pipeline layout '2|3' lists 2 stage(s), the plan has 3 logical stages");
  EXPECT_EQ(parseStageLayout("2|2|2", 3, 5).error().message,
            "pipeline layout '2|2|2' places 6 units, the model has 5");
  EXPECT_FALSE(parseStageLayout("2|x|3", 3, 5).ok());
  EXPECT_FALSE(parseStageLayout("2|-1|4", 3, 5).ok());
  EXPECT_FALSE(parseStageLayout("2|3|", 3, 5).ok());
  EXPECT_FALSE(parseStageLayout("", 1, 5).ok());
}

TEST(Schedules, VirtualStagesAndMicrobatches) {
  EXPECT_TRUE(validateSchedule(Schedule::OneFOneB, 4, 1, 4).ok());
  EXPECT_TRUE(validateSchedule(Schedule::GPipe, 2, 1, 8).ok());
  EXPECT_TRUE(validateSchedule(Schedule::Interleaved1F1B, 2, 2, 4).ok());
  EXPECT_TRUE(validateSchedule(Schedule::ZeroBubble, 2, 2, 8).ok());
  EXPECT_FALSE(validateSchedule(Schedule::OneFOneB, 2, 2, 8).ok());
  EXPECT_FALSE(validateSchedule(Schedule::GPipe, 2, 2, 8).ok());
  EXPECT_FALSE(validateSchedule(Schedule::Interleaved1F1B, 2, 1, 8).ok());
  EXPECT_FALSE(validateSchedule(Schedule::ZeroBubble, 2, 1, 8).ok());
  EXPECT_EQ(validateSchedule(Schedule::Interleaved1F1B, 2, 2, 3).error().message,
            "pipeline needs at least stages x virtual stages = 4 microbatches, got 3");
  EXPECT_EQ(*parseSchedule("interleaved_1f1b"), Schedule::Interleaved1F1B);
  EXPECT_STREQ(scheduleName(Schedule::ZeroBubble), "zero_bubble");
  EXPECT_FALSE(parseSchedule("2f2b").ok());
}

TEST(Units, TopLevelBlocks) {
  // One Sequential wraps everything: its children are the units; "mean" joins the last.
  std::vector<PipelineUnit> units = pipelineUnits(test::csnn(4));
  ASSERT_EQ(units.size(), 13u);
  EXPECT_EQ(units.front().name, "conv_fc.0");
  EXPECT_EQ(units.back().name, "conv_fc.12");
  EXPECT_EQ(units.back().ops, (std::vector<int>{12, 13}));
  // A bare Sequential: functional "0" (flatten) joins the first module unit.
  units = pipelineUnits(test::spikingMlp(16, 8, 4));
  ASSERT_EQ(units.size(), 4u);
  EXPECT_EQ(units[0].name, "1");
  EXPECT_EQ(units[0].ops, (std::vector<int>{0, 1}));
}

TEST(Units, NestedBlocksAndFunctionalOps) {
  test::ModelBuilder b({2, -1, 8}, 2);
  int x = b.linear(-1, 8, false, "stem.0");
  x = b.neuron(x, OpKind::IFNode, "stem.1");
  x = b.linear(x, 8, false, "layers.0.fc");
  x = b.neuron(x, OpKind::IFNode, "layers.0.sn");
  x = b.linear(x, 8, false, "layers.1.fc");
  x = b.linear(x, 4, false, "head.0");
  x = b.meanTime(x, "mean");
  std::vector<PipelineUnit> units = pipelineUnits(b.build(x));
  ASSERT_EQ(units.size(), 3u);
  EXPECT_EQ(units[0].name, "stem");
  EXPECT_EQ(units[1].name, "layers");
  EXPECT_EQ(units[1].ops.size(), 3u);
  EXPECT_EQ(units[2].name, "head");
  EXPECT_EQ(units[2].ops, (std::vector<int>{5, 6}));
}

TEST(Units, ATransformerBlockIsNeverCut) {
  // stem, then two blocks of attention + MLP: however many units are asked for, a block
  // (the parent of a spiking attention's module) stays one unit; the stem still splits.
  test::ModelBuilder b({2, -1, 24, 2, 2}, 2);
  int x = b.conv(-1, 24, 1, 0, "stem.0");
  x = b.neuron(x, OpKind::LIFNode, "stem.1");
  for (const char *block : {"blocks.0", "blocks.1"}) {
    std::string p = block;
    int a = b.conv(x, 72, 1, 0, p + ".attn.qkv.0");
    a = b.neuron(a, OpKind::LIFNode, p + ".attn.qkv_lif");
    a = b.spikingAttention(a, 4, p + ".attn/attention");
    a = b.neuron(a, OpKind::LIFNode, p + ".attn.attn_lif");
    x = b.conv(a, 24, 1, 0, p + ".mlp.fc1.0");
    x = b.neuron(x, OpKind::LIFNode, p + ".mlp.neuron1");
  }
  ModelInfo model = b.build(x);
  std::vector<PipelineUnit> units = pipelineUnits(model, 16);
  std::vector<std::string> names;
  for (const PipelineUnit &unit : units)
    names.push_back(unit.name);
  EXPECT_EQ(names, (std::vector<std::string>{"stem.0", "stem.1", "blocks.0", "blocks.1"}));
  EXPECT_EQ(units[2].ops.size(), 6u);
}

TEST(Units, TooFewBlocksAreSplitIntoTheirChildren) {
  test::ModelBuilder b({2, -1, 8}, 2);
  int x = b.linear(-1, 8, false, "features.0");
  x = b.neuron(x, OpKind::IFNode, "features.1");
  x = b.linear(x, 8, false, "features.2");
  x = b.neuron(x, OpKind::IFNode, "features.3");
  x = b.linear(x, 4, false, "classifier.0.fc");
  x = b.neuron(x, OpKind::IFNode, "classifier.0.sn");
  x = b.meanTime(x, "mean");
  ModelInfo model = b.build(x);
  EXPECT_EQ(pipelineUnits(model).size(), 2u);
  EXPECT_EQ(pipelineUnits(model, 2).size(), 2u);
  // One level down: features.0 .. features.3 and classifier.0 (its two ops and the mean).
  std::vector<PipelineUnit> units = pipelineUnits(model, 4);
  ASSERT_EQ(units.size(), 5u);
  EXPECT_EQ(units[0].name, "features.0");
  EXPECT_EQ(units[4].name, "classifier.0");
  EXPECT_EQ(units[4].ops, (std::vector<int>{4, 5, 6}));
  // Two levels down where the paths go deeper; never beyond the paths.
  units = pipelineUnits(model, 6);
  ASSERT_EQ(units.size(), 6u);
  EXPECT_EQ(units[5].name, "classifier.0.sn");
  EXPECT_EQ(pipelineUnits(model, 100).size(), 6u);
}
