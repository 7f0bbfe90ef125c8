//===- LaunchTest.cpp - What the --nproc launcher refuses before any rank --===//
//
// The launcher reads the manifest and refuses export, another world size and
// train batches the ranks cannot split, each with the one line the ranks would
// give (one home per message: BatchLoader.h, TrainSettings.h), so a bad run
// fails once before anything starts. Every case here throws before a rank
// would be started.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include "snn/Runtime/Commands/Launch.h"
#include "snn/Runtime/Data/BatchLoader.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Training/TrainSettings.h"
#include "snn/Schema/Manifest.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

using namespace snn::runtime;
using snn::test::errorOf;
using snn::test::TempDir;

namespace {

/// An artifact directory holding only a manifest: the launcher reads no program.
std::string writeManifestDir(const TempDir &dir, const std::string &name,
                             const snn::schema::Manifest &manifest) {
  std::string path = dir.file(name);
  std::filesystem::create_directories(path);
  snn::test::writeFile(path + "/manifest.json", snn::schema::formatManifest(manifest));
  return path;
}

snn::schema::Manifest baseManifest() {
  snn::schema::Manifest m;
  m.input = {"input", {4, -1, 3}, true};
  m.output = {"output", {-1, 2}, false};
  return m;
}

/// A dp artifact of `ranks` ranks: one program on every rank.
snn::schema::Manifest dataParallel(int ranks) {
  snn::schema::Manifest m = baseManifest();
  m.worldSize = ranks;
  m.mesh = {{"dp"}, {ranks}};
  m.programs = {{"program_0.onnx", {}}};
  for (int r = 0; r < ranks; ++r)
    m.programs[0].ranks.push_back(r);
  m.plan.mode = snn::schema::ParallelMode::DP;
  m.plan.batchSize = 8;
  m.plan.dpMeshDim = 0;
  return m;
}

/// Two pipeline stages on two ranks, 4 microbatches per batch.
snn::schema::Manifest pipeline() {
  snn::schema::Manifest m = baseManifest();
  m.worldSize = 2;
  m.mesh = {{"pp"}, {2}};
  m.programs = {{"program_0.onnx", {0}, 0}, {"program_1.onnx", {1}, 1}};
  m.plan.mode = snn::schema::ParallelMode::PP;
  m.plan.batchSize = 8;
  m.plan.ppMeshDim = 0;
  m.plan.ppMicrobatches = 4;
  m.plan.ppSchedule = snn::schema::PipelineSchedule::OneFOneB;
  return m;
}

/// `--nproc` arguments. Should a check be missing, the launcher starts ranks of this test
/// program (/proc/self/exe): they run no test and exit 0, and the expected error is missing.
snn::dist::LauncherArguments ranks(int nproc) {
  snn::dist::LauncherArguments arguments;
  arguments.nproc = nproc;
  arguments.argv = {"snn-run", "--gtest_filter=-*"};
  return arguments;
}

} // namespace

TEST(Launch, ExportAndAnotherWorldSizeAreRefused) {
  TempDir dir;
  std::string art = writeManifestDir(dir, "dp2", dataParallel(2));
  EXPECT_EQ(errorOf([&] { launchRanks({"export", art}, ranks(2)); }),
            "export runs in one process: drop --nproc");
  // A pp axis cannot change size.
  std::string pp = writeManifestDir(dir, "pp", pipeline());
  EXPECT_EQ(errorOf([&] { launchRanks({"infer", pp}, ranks(3)); }),
            pp + ": the artifact is compiled for world_size 2 (pp=2) but this run has 3 ranks, "
                 "and it has no 'dp' axis to resize (--nproc / WORLD_SIZE must be 2)");
}

TEST(Launch, ADataParallelAxisTakesTheRanksAtHand) {
  TempDir dir;
  // dp=4 planned, 3 ranks: the global batch of 6 splits over the resized dp axis, 8 does not.
  std::string dp4 = writeManifestDir(dir, "dp4", dataParallel(4));
  TrainOptions train;
  train.batchSize = 8;
  EXPECT_EQ(errorOf([&] { launchRanks({"train", dp4, &train}, ranks(3)); }),
            "--batch-size 8 is not divisible by the 3 data-parallel ranks "
            "(--batch-size is the global batch, split evenly over the ranks)");
}

TEST(Launch, TrainBatchesTheRanksCannotSplitAreRefused) {
  TempDir dir;
  TrainOptions train;
  train.batchSize = 6;
  std::string dp4 = writeManifestDir(dir, "dp4", dataParallel(4));
  std::string split = "--batch-size 6 is not divisible by the 4 data-parallel ranks "
                      "(--batch-size is the global batch, split evenly over the ranks)";
  EXPECT_EQ(errorOf([&] { launchRanks({"train", dp4, &train}, ranks(4)); }), split);
  // The ranks' loaders give the same line (one home: checkBatchSplit).
  EXPECT_EQ(errorOf([] { checkBatchSplit(6, 4); }), split);
  EXPECT_EQ(errorOf([] { checkBatchSplit(8, 4); }), "");

  std::string pp = writeManifestDir(dir, "pp", pipeline());
  std::string microbatches = "--batch-size 6 over 1 data-parallel replica(s) gives batches of 6 "
                             "samples per pipeline, which do not divide into the plan's 4 "
                             "microbatches (pp_microbatches)";
  EXPECT_EQ(errorOf([&] { launchRanks({"train", pp, &train}, ranks(2)); }), microbatches);
  EXPECT_EQ(errorOf([&] { checkPipelineBatches(train, 4, 1, 0); }), microbatches);
  // A rank knows the dataset: --keep-last's short last batch must cut too.
  train.batchSize = 8;
  train.dropLast = false;
  EXPECT_EQ(errorOf([&] { checkPipelineBatches(train, 4, 1, 10); }),
            "--batch-size 8 over 1 data-parallel replica(s) gives batches of 8 (and a last one "
            "of 2) samples per pipeline, which do not divide into the plan's 4 microbatches "
            "(pp_microbatches)");
  EXPECT_EQ(errorOf([&] { checkPipelineBatches(train, 4, 1, 12); }), "");
}

TEST(Launch, CalibrateStartsItsOwnRanks) {
  EXPECT_EQ(errorOf([] { checkCalibrateLaunch(2); }),
            "calibrate starts its own ranks (--ranks): drop --nproc");
}
