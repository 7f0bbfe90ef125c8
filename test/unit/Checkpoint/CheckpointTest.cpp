//===- CheckpointTest.cpp - Checkpoint files, directory and refusals ------===//

#include "TestSupport.h"
#include "TrainTestSupport.h"

#include "snn/Runtime/Execution/Artifact.h"
#include "snn/Runtime/Checkpoint/Checkpoint.h"
#include "snn/Runtime/Checkpoint/CheckpointDirectory.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Execution/Model.h"
#include "snn/Runtime/Execution/RandomState.h"
#include "snn/Runtime/Checkpoint/TrainCheckpoint.h"

#include <ATen/ops/arange.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/rand.h>
#include <gtest/gtest.h>

#include <filesystem>

using namespace snn::runtime;
using snn::test::errorOf;
using snn::test::TempDir;
namespace fs = std::filesystem;

namespace {

CheckpointState sampleState(int64_t step) {
  CheckpointState state;
  state.step = step;
  state.epoch = 2;
  state.batch = 5;
  state.seed = 0xfedcba9876543210ull;
  state.epochLossSum = 1.25;
  state.epochAccuracySum = 0.1 + 0.2;
  state.epochSteps = 5;
  state.epochSeconds = 3.5;
  state.settings = {{"--lr", "0.1"}, {"--batch-size", "8"}};
  state.model = {
      {"fc.weight", "parameter", at::arange(6, at::kFloat).reshape({2, 3})},
      {"fc.w", "parameter", at::ones({})},
      {"bn.running_mean", "buffer", at::rand({4})}};
  state.optimizer = "adam";
  state.optimizerState = {
      {"fc.weight",
       7,
       {{"exp_avg", at::rand({2, 3})}, {"exp_avg_sq", at::rand({2, 3})}}},
      {"fc.w", 7, {}}};
  state.generatorState = cpuGeneratorState();
  return state;
}

void flipByte(const std::string &path, size_t offsetFromEnd) {
  std::string bytes = snn::test::readFile(path);
  bytes[bytes.size() - offsetFromEnd] ^= 0x10;
  snn::test::writeFile(path, bytes);
}

/// A Model of the trainable test artifact with `hidden` units.
Model makeModel(const TempDir &dir, int64_t hidden) {
  std::string path = dir.file("art" + std::to_string(hidden));
  snn::test::writeTrainableArtifact(path, hidden);
  return Model(loadArtifact(path));
}

} // namespace

TEST(Checkpoint, RoundTripsEveryField) {
  TempDir dir;
  CheckpointState saved = sampleState(42);
  saved.runId = 0xfedcba9876543210ull;
  writeCheckpoint(dir.path(), saved);
  CheckpointState loaded = readCheckpoint(dir.path());
  EXPECT_EQ(loaded.runId, saved.runId);
  EXPECT_NE(snn::test::readFile(dir.file("checkpoint.json"))
                .find("\"run_id\": \"fedcba9876543210\""),
            std::string::npos);
  EXPECT_EQ(loaded.step, 42);
  EXPECT_EQ(loaded.epoch, 2);
  EXPECT_EQ(loaded.batch, 5);
  EXPECT_EQ(loaded.seed, saved.seed);
  EXPECT_EQ(loaded.epochLossSum, 1.25);
  EXPECT_EQ(loaded.epochAccuracySum, 0.1 + 0.2); // bit-exact double
  EXPECT_EQ(loaded.epochSteps, 5);
  EXPECT_EQ(loaded.epochSeconds, 3.5);
  EXPECT_EQ(loaded.settings, saved.settings);
  ASSERT_EQ(loaded.model.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(loaded.model[i].name, saved.model[i].name);
    EXPECT_EQ(loaded.model[i].kind, saved.model[i].kind);
    EXPECT_TRUE(loaded.model[i].value.equal(saved.model[i].value));
  }
  EXPECT_EQ(loaded.model[1].value.dim(), 0);
  EXPECT_EQ(loaded.optimizer, "adam");
  ASSERT_EQ(loaded.optimizerState.size(), 2u);
  EXPECT_EQ(loaded.optimizerState[0].step, 7);
  ASSERT_EQ(loaded.optimizerState[0].tensors.size(), 2u);
  EXPECT_EQ(loaded.optimizerState[0].tensors[1].first, "exp_avg_sq");
  EXPECT_TRUE(loaded.optimizerState[0].tensors[1].second.equal(
      saved.optimizerState[0].tensors[1].second));
  EXPECT_TRUE(loaded.optimizerState[1].tensors.empty());
  EXPECT_TRUE(loaded.generatorState.equal(saved.generatorState));
  EXPECT_EQ(modelFingerprint(loaded.model), modelFingerprint(saved.model));
}

TEST(Checkpoint, ReadsOnlyFromItsOwnDirectory) {
  TempDir dir, other;
  writeCheckpoint(other.path(), sampleState(1));
  writeCheckpoint(dir.path(), sampleState(1));
  std::filesystem::remove(dir.file("tensors.bin"));
  std::filesystem::create_symlink(other.file("tensors.bin"), dir.file("tensors.bin"));
  EXPECT_NE(errorOf([&] { readCheckpoint(dir.path()); })
                .find("tensors.bin: resolves to '"),
            std::string::npos);
  std::filesystem::remove(dir.file("checkpoint.json"));
  std::filesystem::create_symlink("/dev/zero", dir.file("checkpoint.json"));
  EXPECT_NE(errorOf([&] { readCheckpoint(dir.path()); }).find("outside '"), std::string::npos);
}

TEST(Checkpoint, RefusesCorruptFiles) {
  TempDir dir;
  writeCheckpoint(dir.path(), sampleState(1));
  std::string tensors = dir.file("tensors.bin");
  std::string meta = dir.file("checkpoint.json");
  std::string goodTensors = snn::test::readFile(tensors);
  std::string goodMeta = snn::test::readFile(meta);

  flipByte(tensors, 100);
  EXPECT_NE(errorOf([&] {
              readCheckpoint(dir.path());
            }).find("is corrupt: checksum mismatch"),
            std::string::npos);
  snn::test::writeFile(tensors, goodTensors.substr(0, goodTensors.size() - 3));
  EXPECT_NE(errorOf([&] { readCheckpoint(dir.path()); }).find("(truncated)"),
            std::string::npos);
  snn::test::writeFile(tensors, goodTensors);

  // Valid JSON with another value is caught by the checksum too.
  std::string edited = goodMeta;
  edited.replace(edited.find("\"step\": 1"), 9, "\"step\": 2");
  snn::test::writeFile(meta, edited);
  EXPECT_NE(errorOf([&] { readCheckpoint(dir.path()); }).find("checksum"),
            std::string::npos);
  snn::test::writeFile(meta, goodMeta.substr(0, goodMeta.size() / 2));
  EXPECT_NE(errorOf([&] {
              readCheckpoint(dir.path());
            }).find("checkpoint.json is not valid JSON"),
            std::string::npos);
  fs::remove(meta);
  EXPECT_NE(errorOf([&] {
              readCheckpoint(dir.path());
            }).find("it has no checkpoint.json"),
            std::string::npos);
  snn::test::writeFile(meta, goodMeta);
  EXPECT_NO_THROW(readCheckpoint(dir.path()));
}

TEST(CheckpointDirectory, PublishesAtomicallyAndKeepsTheNewest) {
  TempDir dir;
  CheckpointDirectory checkpoints(dir.file("ck"), 2);
  EXPECT_EQ(checkpoints.latest(), "");
  for (int64_t step : {3, 6, 9})
    checkpoints.save(sampleState(step));
  std::vector<std::string> expected = {dir.file("ck/step-00000006"),
                                       dir.file("ck/step-00000009")};
  EXPECT_EQ(checkpoints.list(), expected);
  EXPECT_EQ(checkpoints.latest(), dir.file("ck/step-00000009"));
  EXPECT_EQ(snn::test::readFile(dir.file("ck/latest")), "step-00000009\n");
  EXPECT_EQ(CheckpointDirectory::nameForStep(123456789), "step-123456789");
}

TEST(CheckpointDirectory, IgnoresAndCleansHalfWrittenSaves) {
  TempDir dir;
  CheckpointDirectory checkpoints(dir.file("ck"), 2);
  checkpoints.save(sampleState(2));
  fs::create_directories(dir.file("ck/step-00000004.tmp"));
  snn::test::writeFile(dir.file("ck/step-00000004.tmp/tensors.bin"), "xx");
  EXPECT_EQ(checkpoints.latest(), dir.file("ck/step-00000002"));
  checkpoints.save(sampleState(3));
  EXPECT_FALSE(fs::exists(dir.file("ck/step-00000004.tmp")));
}

TEST(CheckpointDirectory, FallsBackWhenLatestIsRemoved) {
  TempDir dir;
  CheckpointDirectory checkpoints(dir.file("ck"), 3);
  checkpoints.save(sampleState(1));
  checkpoints.save(sampleState(2));
  fs::remove_all(dir.file("ck/step-00000002"));
  EXPECT_EQ(checkpoints.latest(), dir.file("ck/step-00000001"));
  fs::remove(dir.file("ck/latest"));
  checkpoints.save(sampleState(5));
  fs::remove(dir.file("ck/latest"));
  EXPECT_EQ(checkpoints.latest(), dir.file("ck/step-00000005"));
}

TEST(CheckpointDirectory, AFailedSaveLeavesThePreviousOne) {
  TempDir dir;
  CheckpointDirectory checkpoints(dir.file("ck"), 1);
  checkpoints.save(sampleState(1));
  CheckpointState bad = sampleState(2);
  bad.model[0].value = at::ones({2}, at::kComplexFloat); // not serialisable
  EXPECT_THROW(checkpoints.save(bad), Error);
  EXPECT_EQ(checkpoints.list(),
            std::vector<std::string>{dir.file("ck/step-00000001")});
  EXPECT_FALSE(fs::exists(dir.file("ck/step-00000002.tmp")));
  EXPECT_NO_THROW(readCheckpoint(checkpoints.latest()));
}

TEST(TrainCheckpoint, RefusesAnotherModelNamingTheParameter) {
  TempDir dir;
  Model small = makeModel(dir, 8);
  Model wide = makeModel(dir, 9);
  CheckpointState state;
  captureModel(small.params(), state);
  EXPECT_NO_THROW(checkSameModel(state, small.params(), "ck"));
  EXPECT_EQ(errorOf([&] { restoreModel(state, wide.params(), "ck/step-1"); }),
            "checkpoint 'ck/step-1' is from a different model: parameter "
            "'fc1.weight' has shape [8, 6] there and [9, 6] here");

  CheckpointState missing = state;
  missing.model.erase(missing.model.begin() + 1);
  EXPECT_NE(errorOf([&] {
              checkSameModel(missing, small.params(), "ck");
            }).find("parameter 'fc1.bias' of this model is not in it"),
            std::string::npos);
  CheckpointState extra = state;
  extra.model.push_back({"head.weight", "parameter", at::ones({1})});
  EXPECT_NE(errorOf([&] {
              checkSameModel(extra, small.params(), "ck");
            }).find("parameter 'head.weight' is not in this model"),
            std::string::npos);
  CheckpointState kind = state;
  kind.model.back().kind = "parameter";
  EXPECT_NE(errorOf([&] {
              checkSameModel(kind, small.params(), "ck");
            }).find("'bn.running_var' is a parameter there and a buffer here"),
            std::string::npos);
}

TEST(TrainCheckpoint, RestoresModelAndOptimizer) {
  TempDir dir;
  Model source = makeModel(dir, 8);
  Model target = makeModel(dir, 8);
  source.params().set("fc2.weight", at::ones({3, 8}));
  OptimizerConfig adam;
  adam.kind = OptimizerKind::Adam;
  Optimizer optimizer(adam, source.params().parameterNames(),
                      source.params().parameters());
  optimizer.states()[0].step = 4;
  optimizer.states()[0].expAvg = at::ones({8, 6});
  CheckpointState state;
  captureModel(source.params(), state);
  captureOptimizer(optimizer, state);

  restoreModel(state, target.params(), "ck");
  EXPECT_TRUE(target.params().get("fc2.weight").equal(at::ones({3, 8})));
  Optimizer restored(adam, target.params().parameterNames(),
                     target.params().parameters());
  restoreOptimizer(state, restored, "ck");
  EXPECT_EQ(restored.states()[0].step, 4);
  EXPECT_TRUE(restored.states()[0].expAvg.equal(at::ones({8, 6})));

  OptimizerConfig sgd;
  Optimizer other(sgd, target.params().parameterNames(),
                  target.params().parameters());
  EXPECT_NE(errorOf([&] {
              restoreOptimizer(state, other, "ck");
            }).find("holds adam state; this run uses --optimizer sgd"),
            std::string::npos);
}
