//===- TrainerTest.cpp - The training loop, resume and failures -----------===//

#include "TestSupport.h"
#include "TrainTestSupport.h"

#include "snn/Runtime/Execution/Artifact.h"
#include "snn/Runtime/Data/BatchLoader.h"
#include "snn/Runtime/Checkpoint/CheckpointDirectory.h"
#include "snn/Runtime/Checkpoint/NonFiniteValues.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Training/Evaluate.h"
#include "snn/Runtime/Execution/Model.h"
#include "snn/Runtime/Training/Trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>

using namespace snn::runtime;
using snn::test::TempDir;

namespace {

constexpr int64_t kBatch = 3;

TrainConfig adamConfig(int64_t totalSteps) {
  TrainConfig config;
  config.totalSteps = totalSteps;
  config.optimizer.kind = OptimizerKind::Adam;
  config.schedule.kind = ScheduleKind::Step;
  config.schedule.lr = 0.05;
  config.schedule.stepSize = 3;
  config.schedule.gamma = 0.5;
  config.schedule.totalSteps = totalSteps;
  config.loss = LossKind::CrossEntropy;
  config.seed = 11;
  return config;
}

/// One model and its data; a fresh one per (partial) run, as separate
/// processes would have.
struct TrainingRun {
  Artifact artifact;
  Model model;
  BatchLoader train;
  BatchLoader eval;

  TrainingRun(const std::string &artifactDir, const Dataset &data)
      : artifact(loadArtifact(artifactDir)), model(artifact),
        train(data, BatchLayout{snn::test::kTrainSteps, false},
              LoaderOptions{kBatch, true, true, 5}),
        eval(data, BatchLayout{snn::test::kTrainSteps, false},
             LoaderOptions{kBatch, false, false, 0}) {}

  TrainSummary trainRun(TrainConfig config, TrainSinks sinks = {},
                        const CheckpointState *from = nullptr) {
    Trainer trainer(model, train, &eval, std::move(config), sinks);
    if (from)
      trainer.restore(*from, "test-checkpoint");
    return trainer.run();
  }
};

void expectSameState(Model &a, Model &b) {
  const auto &left = a.params().entries();
  const auto &right = b.params().entries();
  ASSERT_EQ(left.size(), right.size());
  for (size_t i = 0; i < left.size(); ++i)
    EXPECT_TRUE(left[i].tensor.equal(right[i].tensor))
        << left[i].name << " differs";
}

int countLines(const std::string &path, const std::string &needle) {
  std::ifstream in(path);
  int count = 0;
  for (std::string line; std::getline(in, line);)
    count += line.find(needle) != std::string::npos;
  return count;
}

} // namespace

TEST(Trainer, ResumeIsBitIdenticalToAStraightRun) {
  TempDir dir;
  snn::test::writeTrainableArtifact(dir.file("art"));
  Dataset data = snn::test::makeStaticDataset(10, 3); // 3 batches per epoch

  TrainingRun straight(dir.file("art"), data);
  TrainSummary all = straight.trainRun(adamConfig(8));
  EXPECT_EQ(all.step, 8);
  EXPECT_TRUE(all.finished);

  // Stop after 4 steps, inside epoch 1, then continue in a new model.
  CheckpointDirectory checkpoints(dir.file("ck"), 2);
  TrainingRun first(dir.file("art"), data);
  TrainConfig stopped = adamConfig(8);
  stopped.stopAfter = 4;
  TrainSummary part = first.trainRun(stopped, {nullptr, nullptr, &checkpoints});
  EXPECT_EQ(part.step, 4);
  EXPECT_FALSE(part.finished);
  CheckpointState state = readCheckpoint(checkpoints.latest());
  EXPECT_EQ(state.epoch, 1);
  EXPECT_EQ(state.batch, 1);

  TrainingRun resumed(dir.file("art"), data);
  TrainSummary rest = resumed.trainRun(adamConfig(8), {}, &state);
  EXPECT_EQ(rest.stepsDone, 4);
  expectSameState(resumed.model, straight.model);
  // The run really trained (weights and running statistics moved).
  TrainingRun initial(dir.file("art"), data);
  EXPECT_FALSE(initial.model.params()
                   .get("fc1.weight")
                   .equal(straight.model.params().get("fc1.weight")));
  EXPECT_FALSE(initial.model.params()
                   .get("bn.running_mean")
                   .equal(straight.model.params().get("bn.running_mean")));
}

TEST(Trainer, AFinishedRunExtendsLikeALongerOne) {
  TempDir dir;
  snn::test::writeTrainableArtifact(dir.file("art"));
  Dataset data = snn::test::makeStaticDataset(10, 4);
  TrainingRun straight(dir.file("art"), data);
  straight.trainRun(adamConfig(7));

  CheckpointDirectory checkpoints(dir.file("ck"), 1);
  TrainingRun shorter(dir.file("art"), data);
  shorter.trainRun(adamConfig(4), {nullptr, nullptr, &checkpoints});
  CheckpointState state = readCheckpoint(checkpoints.latest());
  EXPECT_EQ(state.step, 4);
  EXPECT_EQ(state.batch, 1); // the run ended inside epoch 1 and stays there
  TrainingRun extended(dir.file("art"), data);
  extended.trainRun(adamConfig(7), {}, &state);
  expectSameState(extended.model, straight.model);
}

TEST(Trainer, CheckpointsCarryTheRunIdAcrossResume) {
  TempDir dir;
  snn::test::writeTrainableArtifact(dir.file("art"));
  Dataset data = snn::test::makeStaticDataset(10, 4);
  CheckpointDirectory first(dir.file("ck1"), 2), second(dir.file("ck2"), 2);
  TrainingRun one(dir.file("art"), data), two(dir.file("art"), data);
  one.trainRun(adamConfig(2), {nullptr, nullptr, &first});
  two.trainRun(adamConfig(2), {nullptr, nullptr, &second});
  CheckpointState state = readCheckpoint(first.latest());
  EXPECT_NE(state.runId, 0u);
  // Two fresh runs, even with the same settings, are two runs.
  EXPECT_NE(readCheckpoint(second.latest()).runId, state.runId);
  TrainingRun resumed(dir.file("art"), data);
  resumed.trainRun(adamConfig(4), {nullptr, nullptr, &first}, &state);
  CheckpointState after = readCheckpoint(first.latest());
  EXPECT_EQ(after.step, 4);
  EXPECT_EQ(after.runId, state.runId);
  // A checkpoint from before run ids continues under a new one.
  state.runId = 0;
  CheckpointDirectory third(dir.file("ck3"), 2);
  TrainingRun old(dir.file("art"), data);
  old.trainRun(adamConfig(4), {nullptr, nullptr, &third}, &state);
  EXPECT_NE(readCheckpoint(third.latest()).runId, 0u);
}

TEST(Trainer, LogsStepsAndEpochsAndCheckpointsPeriodically) {
  TempDir dir;
  snn::test::writeTrainableArtifact(dir.file("art"));
  Dataset data = snn::test::makeStaticDataset(10, 5);
  MetricsLog log(dir.file("log.jsonl"), false);
  CheckpointDirectory checkpoints(dir.file("ck"), 5);
  TrainConfig config = adamConfig(7);
  config.checkpointEvery = 3;
  TrainingRun run(dir.file("art"), data);
  TrainSummary summary = run.trainRun(config, {&log, nullptr, &checkpoints});
  EXPECT_EQ(countLines(dir.file("log.jsonl"), "\"event\":\"step\""), 7);
  // Epochs 0 and 1 complete, epoch 2 partial at the end.
  EXPECT_EQ(countLines(dir.file("log.jsonl"), "\"event\":\"epoch\""), 3);
  EXPECT_EQ(countLines(dir.file("log.jsonl"), "eval_accuracy"), 3);
  EXPECT_EQ(checkpoints.list().size(), 3u); // steps 3, 6 and the final 7
  ASSERT_TRUE(summary.hasEpoch);
  EXPECT_EQ(summary.lastEpoch.steps, 1);
  EXPECT_EQ(summary.lastEpoch.eval.samples, 10);
}

TEST(Trainer, LogsFiringRatesAndWarnsOnceAnEpochAboutASilentLayer) {
  // A zero input: BatchNorm's batch statistics turn it into its bias (at most 0.5), below
  // the LIF's threshold of 1, and the PLIF after it gets no input either.
  TempDir dir;
  snn::test::writeTrainableArtifact(dir.file("art"));
  Dataset data = snn::test::makeStaticDataset(6, 5);
  data.samples.zero_();
  MetricsLog log(dir.file("log.jsonl"), false);
  TrainingRun run(dir.file("art"), data);
  testing::internal::CaptureStderr();
  run.trainRun(adamConfig(4), {&log});
  std::string warnings = testing::internal::GetCapturedStderr();
  std::string silent = R"("firing_rates":{"layer3":0.0,"layer5":0.0})";
  EXPECT_EQ(countLines(dir.file("log.jsonl"), silent), 4 + 2) << "4 steps, 2 epochs";
  EXPECT_EQ(countLines(dir.file("log.jsonl"), R"("grad_norms":{"fc1":)"), 4);
  // Two epochs of 2 steps: one line per silent layer and epoch.
  EXPECT_EQ(warnings,
            "warning: neuron layer 'layer3' fired no spike in epoch 0 (firing rate 0)\n"
            "warning: neuron layer 'layer5' fired no spike in epoch 0 (firing rate 0)\n"
            "warning: neuron layer 'layer3' fired no spike in epoch 1 (firing rate 0)\n"
            "warning: neuron layer 'layer5' fired no spike in epoch 1 (firing rate 0)\n");
}

TEST(Trainer, StopsOnANonFiniteLoss) {
  TempDir dir;
  snn::test::writeReadoutArtifact(dir.file("art"));
  Dataset data = snn::test::makeStaticDataset(9, 6);
  data.samples[4][2].fill_(std::numeric_limits<float>::quiet_NaN()); // batch 1
  Artifact artifact = loadArtifact(dir.file("art"));
  Model model(artifact);
  BatchLoader train(data, {snn::test::kTrainSteps, false},
                    {kBatch, false, true, 0});
  Trainer trainer(model, train, nullptr, adamConfig(3), {});
  try {
    trainer.run();
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "loss is nan at step 1 (epoch 0)");
  }
  EXPECT_EQ(trainer.step(), 1);
}

TEST(Trainer, SkipsANonFiniteStepAndTrainsOn) {
  TempDir dir;
  snn::test::writeReadoutArtifact(dir.file("art"));
  Dataset data = snn::test::makeStaticDataset(9, 6);
  data.samples[4][2].fill_(std::numeric_limits<float>::quiet_NaN()); // batch 1
  Artifact artifact = loadArtifact(dir.file("art"));
  Model model(artifact);
  BatchLoader train(data, {snn::test::kTrainSteps, false},
                    {kBatch, false, true, 0});
  TrainConfig config = adamConfig(3);
  config.skipNonFiniteSteps = true;
  CheckpointDirectory checkpoints(dir.file("ck"), 1);
  MetricsLog log(dir.file("log.jsonl"), false);
  Trainer trainer(model, train, nullptr, config, {&log, nullptr, &checkpoints});
  TrainSummary summary = trainer.run();
  EXPECT_EQ(summary.stepsDone, 3);
  EXPECT_EQ(summary.skippedSteps, 1);
  EXPECT_EQ(countLines(dir.file("log.jsonl"), "\"skipped\":true"), 1);
  CheckpointState saved = readCheckpoint(checkpoints.latest());
  EXPECT_EQ(saved.step, 3);
  ASSERT_EQ(saved.optimizerState.size(), 1u);
  EXPECT_EQ(saved.optimizerState[0].step, 2) << "Adam stepped on the two good batches only";
  EXPECT_EQ(firstNonFiniteTensor(saved), "");
}

TEST(Trainer, BackgroundAndSynchronousSavesWriteTheSameCheckpoints) {
  TempDir dir;
  snn::test::writeTrainableArtifact(dir.file("art"));
  Dataset data = snn::test::makeStaticDataset(10, 5);
  std::vector<std::string> written[2];
  for (int sync = 0; sync < 2; ++sync) {
    std::string ck = dir.file(sync ? "sync" : "background");
    CheckpointDirectory checkpoints(ck, 5);
    TrainConfig config = adamConfig(5);
    config.checkpointEvery = 2;
    config.checkpointPolicy.background = !sync;
    TrainingRun run(dir.file("art"), data);
    run.trainRun(config, {nullptr, nullptr, &checkpoints});
    for (const std::string &path : checkpoints.list())
      written[sync].push_back(snn::test::readFile(path + "/tensors.bin"));
  }
  EXPECT_EQ(written[0].size(), 3u); // steps 2, 4 and the final 5
  EXPECT_EQ(written[0], written[1]);
}

TEST(Trainer, RefusesTooFewSamplesForOneBatch) {
  TempDir dir;
  snn::test::writeTrainableArtifact(dir.file("art"));
  Artifact artifact = loadArtifact(dir.file("art"));
  Model model(artifact);
  BatchLoader train(snn::test::makeStaticDataset(2, 1),
                    {snn::test::kTrainSteps, false}, {kBatch, true, true, 0});
  EXPECT_THROW(Trainer(model, train, nullptr, adamConfig(1), {}), Error);
}

TEST(Evaluate, AveragesOverSamplesWithAShortLastBatch) {
  TempDir dir;
  snn::test::writeTrainableArtifact(dir.file("art"));
  Dataset data = snn::test::makeStaticDataset(7, 8);
  Artifact artifact = loadArtifact(dir.file("art"));
  Model model(artifact);
  BatchLoader byThree(data, {snn::test::kTrainSteps, false},
                      {3, false, false, 0});
  BatchLoader all(data, {snn::test::kTrainSteps, false}, {7, false, false, 0});
  EvalMetrics a = evaluate(model, byThree, LossKind::Mse);
  EvalMetrics b = evaluate(model, all, LossKind::Mse);
  EXPECT_EQ(a.samples, 7);
  // One float32 mean of 7 x 3 squared errors against three (3 + 3 + 1 rows)
  // weighted in float64: sums of the same nonnegative terms in other
  // groupings, each within gamma(terms) of the exact loss.
  int64_t terms = 7 * snn::test::kTrainClasses + 1; // + the division
  EXPECT_LE(std::abs(a.loss - b.loss),
            2 * snn::test::float32Gamma(terms) * std::max(a.loss, b.loss))
      << a.loss << " vs " << b.loss;
  EXPECT_EQ(a.accuracy, b.accuracy);
}
