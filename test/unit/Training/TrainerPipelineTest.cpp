//===- TrainerPipelineTest.cpp - The training loop of a pipeline ----------===//
//
// Trainer with a pipeline artifact in one process (a pp axis of one): any
// schedule trains the same weights as any other over the same microbatches,
// a resumed run is bit-identical, evaluation goes through the stages, and
// the log's end event carries the bubble.
//
//===----------------------------------------------------------------------===//

#include "PipelineTestSupport.h"
#include "TestSupport.h"
#include "TrainTestSupport.h"

#include "snn/Runtime/Checkpoint/CheckpointDirectory.h"
#include "snn/Runtime/Checkpoint/PipelineCheckpoint.h"
#include "snn/Runtime/Execution/Artifact.h"
#include "snn/Runtime/Execution/DataParallel.h"
#include "snn/Runtime/Execution/Model.h"
#include "snn/Runtime/Pipeline/PipelineEngine.h"
#include "snn/Runtime/Training/Evaluate.h"
#include "snn/Runtime/Training/Trainer.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

using namespace snn::runtime;
using snn::test::PipelineSpec;
using snn::test::TempDir;

namespace {

TrainConfig sgdConfig(int64_t totalSteps) {
  TrainConfig config;
  config.totalSteps = totalSteps;
  config.optimizer.kind = OptimizerKind::Sgd;
  config.optimizer.momentum = 0.9;
  config.schedule.lr = 0.5;
  config.schedule.totalSteps = totalSteps;
  config.loss = LossKind::Mse;
  config.seed = 7;
  return config;
}

/// One pipeline artifact's model, data and engine, as one process holds them.
struct PipelineRun {
  Artifact artifact;
  Model model;
  BatchLoader train, eval;
  MeshContext mesh;
  DataParallelContext dp;
  std::unique_ptr<PipelineEngine> engine;

  PipelineRun(const std::string &dir, const Dataset &data)
      : artifact(loadArtifact(dir)), model(artifact),
        train(data, BatchLayout{snn::test::kPipeSteps, false}, LoaderOptions{6, true, true, 5}),
        eval(data, BatchLayout{snn::test::kPipeSteps, false}, LoaderOptions{4, false, false, 0}),
        mesh(MeshContext::create(nullptr, artifact.manifest.mesh)) {
    PipelinePlace place;
    place.layout = readPipelineLayout(dir, artifact.manifest);
    engine = std::make_unique<PipelineEngine>(model, place, LossKind::Mse);
  }

  TrainSummary run(TrainConfig config, TrainSinks sinks = {}, PipelineTrace *trace = nullptr,
                   const CheckpointState *from = nullptr, Trainer **out = nullptr) {
    Trainer trainer(model, train, &eval, std::move(config), sinks);
    trainer.enablePipeline(*engine, mesh, dp, trace);
    if (from)
      trainer.restore(*from, "test-checkpoint");
    TrainSummary summary = trainer.run();
    bubble = trainer.measuredBubble();
    return summary;
  }
  double bubble = -1.0;
};

std::string writeSpec(const TempDir &dir, const std::string &name, int64_t stages,
                      const std::string &schedule, bool delay = false) {
  PipelineSpec spec;
  spec.stages = stages;
  spec.schedule = schedule;
  spec.delayWgrad = delay;
  spec.microbatches = 2;
  snn::test::writePipelineArtifact(dir.file(name), spec);
  return dir.file(name);
}

void expectSameState(const Model &a, const Model &b, const std::string &what) {
  ASSERT_EQ(a.params().size(), b.params().size());
  for (size_t i = 0; i < a.params().size(); ++i)
    EXPECT_TRUE(a.params().entries()[i].tensor.equal(b.params().entries()[i].tensor))
        << what << ": " << a.params().entries()[i].name;
}

} // namespace

/// The step losses a MetricsLog file holds.
std::vector<double> loggedLosses(const std::string &path) {
  std::vector<double> losses;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json event = nlohmann::json::parse(line);
    if (event["event"] == "step")
      losses.push_back(event["loss"].get<double>());
  }
  return losses;
}

TEST(TrainerPipeline, EverySchedulesTrainsTheSameWeights) {
  TempDir dir;
  Dataset data = snn::test::makeStaticDataset(12, 3); // 2 batches of 6 per epoch
  at::Tensor first = data.samples.narrow(0, 0, 6).unsqueeze(0).repeat(
      {snn::test::kPipeSteps, 1, 1});
  snn::test::expectModeratePipelineRates(first);
  PipelineRun one(writeSpec(dir, "one", 1, "gpipe"), data);
  MetricsLog log(dir.file("one.jsonl"), false);
  TrainSummary summary = one.run(sgdConfig(4), {&log});
  std::vector<double> losses = loggedLosses(dir.file("one.jsonl"));
  ASSERT_EQ(losses.size(), 4u);
  EXPECT_GT(*std::max_element(losses.begin(), losses.end()) -
                *std::min_element(losses.begin(), losses.end()),
            1e-6);
  EXPECT_TRUE(summary.finished);
  EXPECT_TRUE(summary.hasEpoch && summary.lastEpoch.hasEval);
  Model initial(loadArtifact(dir.file("one")));
  EXPECT_FALSE(initial.params().get("fc0.weight").equal(one.model.params().get("fc0.weight")));
  EXPECT_FALSE(initial.params().get("bn2.running_mean")
                   .equal(one.model.params().get("bn2.running_mean")));
  for (auto [name, stages, schedule, delay] :
       {std::make_tuple("zb", 4, "zero_bubble", false),
        std::make_tuple("inter", 2, "interleaved_1f1b", false),
        std::make_tuple("delay", 2, "gpipe", true)}) {
    PipelineRun other(writeSpec(dir, name, stages, schedule, delay), data);
    TrainSummary got = other.run(sgdConfig(4));
    EXPECT_EQ(got.lastStep.loss, summary.lastStep.loss) << name;
    EXPECT_EQ(got.lastEpoch.eval.loss, summary.lastEpoch.eval.loss) << name;
    expectSameState(other.model, one.model, name);
  }
}

TEST(TrainerPipeline, ResumeIsBitIdenticalToAStraightRun) {
  TempDir dir;
  Dataset data = snn::test::makeStaticDataset(12, 4);
  std::string art = writeSpec(dir, "pp", 4, "zero_bubble");
  PipelineRun straight(art, data);
  straight.run(sgdConfig(6));
  CheckpointDirectory checkpoints(dir.file("ck"), 2);
  PipelineRun first(art, data);
  TrainConfig stopped = sgdConfig(6);
  stopped.stopAfter = 3;
  first.run(stopped, {nullptr, nullptr, &checkpoints});
  CheckpointState state = readCheckpoint(checkpoints.latest());
  EXPECT_EQ(state.step, 3);
  PipelineRun resumed(art, data);
  resumed.run(sgdConfig(6), {}, nullptr, &state);
  expectSameState(resumed.model, straight.model, "resumed");
}

TEST(TrainerPipeline, EvaluationRunsThroughTheStages) {
  TempDir dir;
  Dataset data = snn::test::makeStaticDataset(10, 5);
  PipelineRun pp(writeSpec(dir, "pp", 4, "gpipe"), data);
  snn::test::writeUnsplitPipelineModel(dir.file("whole"));
  Model whole(loadArtifact(dir.file("whole")));
  EvalMetrics got = evaluatePipeline(*pp.engine, pp.eval, LossKind::Mse);
  EvalMetrics want = evaluate(whole, pp.eval, LossKind::Mse);
  EXPECT_EQ(got.samples, 10);
  EXPECT_EQ(got.loss, want.loss);
  EXPECT_EQ(got.accuracy, want.accuracy);
}

TEST(TrainerPipeline, TheTraceAndTheRankLogReportTheBubble) {
  TempDir dir;
  Dataset data = snn::test::makeStaticDataset(12, 6);
  PipelineRun pp(writeSpec(dir, "pp", 2, "zero_bubble"), data);
  PipelineTrace trace;
  pp.run(sgdConfig(2), {}, &trace);
  EXPECT_GE(pp.bubble, 0.0);
  EXPECT_LT(pp.bubble, 1.0);
  std::map<std::string, int> names;
  for (const PipelineTrace::Span &span : trace.spans())
    ++names[PipelineTrace::nameOf(span)];
  // 2 steps of F, B and W for 2 stages x 2 microbatches, and each step's end.
  for (const char *name : {"F s0 m0", "B s1 m1", "W s0 m1", "W s1 m0"})
    EXPECT_EQ(names[name], 2) << name;
  EXPECT_EQ(names["wait sends"], 2);
  EXPECT_EQ(names["send s0>s1 m0"], 2);
  MetricsLog log(dir.file("log.jsonl"), false);
  BubbleReport report{0.25, 0.125, 0.5, "zero_bubble"};
  RankEnd end;
  end.steps = 2;
  end.peakResidentBytes = 1;
  end.bubble = report;
  log.rankEnd(end);
  std::ifstream in(dir.file("log.jsonl"));
  std::string line;
  std::getline(in, line);
  EXPECT_NE(line.find(R"("bubble":{"measured":0.25,"theoretical":0.125,"pipeline":0.5,)"
                      R"("schedule":"zero_bubble"})"),
            std::string::npos)
      << line;
}

TEST(TrainerPipeline, RefusesShardedOptimizerState) {
  TempDir dir;
  std::string art = writeSpec(dir, "pp", 2, "gpipe");
  std::string path = art + "/manifest.json";
  nlohmann::json manifest = nlohmann::json::parse(snn::test::readFile(path));
  manifest["plan"]["optimizer_strategy"] = "zero";
  snn::test::writeFile(path, manifest.dump());
  Dataset data = snn::test::makeStaticDataset(12, 7);
  PipelineRun pp(art, data);
  std::string error = snn::test::errorOf([&] { pp.run(sgdConfig(1)); });
  EXPECT_NE(error.find("optimizer_strategy 'zero' cannot shard them (ZeRO and fsdp run "
                       "without pp)"),
            std::string::npos)
      << error;
}

TEST(TrainerPipeline, TheChromeTraceHasOneRowPerRank) {
  using Clock = PipelineTrace::Clock;
  Clock::time_point t0 = Clock::now();
  auto at = [&](int us) { return t0 + std::chrono::microseconds(us); };
  PipelineTrace::Span forward{PipelineTrace::Kind::Forward, 0, 1, 0, 3, at(10), at(25)};
  PipelineTrace::Span wait{PipelineTrace::Kind::Wait, 1, 1, 0, 3, at(5), at(30)};
  PipelineTrace::Span send{PipelineTrace::Kind::SendGradient, 1, 1, 0, 3, at(40), at(41)};
  nlohmann::json trace =
      nlohmann::json::parse(PipelineTrace::chromeTrace({{forward}, {wait, send}}));
  std::vector<nlohmann::json> spans;
  for (const auto &event : trace["traceEvents"])
    if (event["ph"] == "X")
      spans.push_back(event);
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[0]["name"], "F s0 m1");
  EXPECT_EQ(spans[0]["cat"], "forward");
  EXPECT_EQ(spans[0]["tid"], 0);
  EXPECT_EQ(spans[0]["pid"], 0);
  EXPECT_DOUBLE_EQ(spans[0]["ts"].get<double>(), 5.0); // from the earliest span
  EXPECT_DOUBLE_EQ(spans[0]["dur"].get<double>(), 15.0);
  EXPECT_EQ(spans[0]["args"]["step"], 3);
  EXPECT_EQ(spans[1]["name"], "wait F s1 m1");
  EXPECT_EQ(spans[1]["cat"], "recv-wait");
  EXPECT_EQ(spans[1]["tid"], 1);
  EXPECT_EQ(spans[2]["name"], "send grad s1>s0 m1");
  EXPECT_DOUBLE_EQ(spans[2]["ts"].get<double>(), 35.0);
}
