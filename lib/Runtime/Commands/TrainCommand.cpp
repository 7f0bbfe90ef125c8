//===- TrainCommand.cpp - The `snn-run train` command ---------------------===//
//
// Glue only: reads the artifact and the data, builds the Trainer with its
// sinks (log, progress, checkpoints), resumes if asked, and writes the
// outputs at the end. The training itself is Trainer.cpp.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Commands/CommandSupport.h"
#include "snn/Runtime/Execution/DataParallel.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Checkpoint/OnnxExport.h"
#include "snn/Runtime/Checkpoint/ParamsIO.h"
#include "snn/Runtime/Checkpoint/ShardedCheckpoint.h"
#include "snn/Runtime/Commands/TrainCommand.h"
#include "snn/Runtime/Checkpoint/TrainCheckpoint.h"
#include "snn/Runtime/Training/TrainSettings.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

namespace snn::runtime {

namespace {

/// The checkpoint to continue from, if --resume finds one. Without --resume
/// a directory that already holds checkpoints is refused rather than mixed
/// with a new run's.
std::optional<CheckpointState> findResumeState(const TrainOptions &options,
                                               const CheckpointDirectory &dir,
                                               const Model &model,
                                               const Settings &settings,
                                               std::string &where) {
  where = dir.latest();
  if (!options.resume) {
    if (!where.empty())
      throw Error("--checkpoint " + dir.path() +
                  " already holds checkpoints "
                  "(latest '" +
                  where +
                  "'); pass --resume to continue that "
                  "run, or use another directory");
    return std::nullopt;
  }
  if (where.empty()) {
    std::cerr << "snn-run: no checkpoint in '" << dir.path()
              << "' yet; starting at step 0" << std::endl;
    return std::nullopt;
  }
  CheckpointState state = readAnyCheckpoint(where);
  // Another model is the more fundamental mismatch: report it first.
  checkSameModel(state, model.params(), where);
  checkResumeSettings(state.settings, settings, where);
  return state;
}

/// In a multi-rank run every rank writes its replica to DIR/rank<R> (tests
/// compare them); rank 0 alone exports the ONNX model. Sharded parameters
/// are gathered for it on every rank.
void writeOutputs(const TrainOptions &options, const Artifact &artifact,
                  Trainer &trainer, const Model &model, int rank, int ranks) {
  if (options.saveParamsDir.empty() && options.exportOnnxPath.empty())
    return;
  trainer.materializeParameters();
  if (!options.saveParamsDir.empty()) {
    std::string dir = options.saveParamsDir;
    if (ranks > 1) {
      dir = (std::filesystem::path(dir) / ("rank" + std::to_string(rank)))
                .string();
      std::filesystem::create_directories(dir);
    }
    saveParamsNpy(dir, model.params());
  }
  if (!options.exportOnnxPath.empty() && rank == 0) {
    std::string program = (std::filesystem::path(artifact.dir) /
                           artifact.manifest.programForRank(0).file)
                              .string();
    exportTrainedOnnx(program, model.params(), options.exportOnnxPath);
  }
  trainer.releaseParameters();
}

/// `--log m.jsonl` in a multi-rank run: every rank also writes
/// m.rank<R>.jsonl (docs/training.md, "Outputs").
std::string rankLogPath(const std::string &path, int rank) {
  std::filesystem::path file(path);
  std::string name = file.stem().string() + ".rank" + std::to_string(rank) +
                     file.extension().string();
  return (file.parent_path() / name).string();
}

void printSummary(const TrainSummary &summary, const TrainConfig &config) {
  char timing[96];
  std::snprintf(timing, sizeof(timing), "%.2f s (%.0f samples/s)",
                summary.seconds,
                double(summary.samples) / std::max(summary.seconds, 1e-9));
  std::cerr << "snn-run: " << summary.stepsDone << " steps in " << timing
            << ", step " << summary.step << " of " << config.totalSteps;
  if (summary.stepsDone > 0)
    std::cerr << ", last loss " << summary.lastStep.loss;
  if (summary.hasEpoch && summary.lastEpoch.hasEval)
    std::cerr << ", eval accuracy " << summary.lastEpoch.eval.accuracy;
  if (!summary.finished)
    std::cerr << "; continue with --resume";
  std::cerr << std::endl;
}

} // namespace

void runTrain(const TrainOptions &options) {
  validateTrainOptions(options);
  Progress::Mode mode = Progress::modeFor(options.progress);
  // (rank 0 alone shows progress: set below once the run is known)
  setIntraOpThreads(options.threads);
  checkParentDirectory(options.logPath, "--log");
  checkParentDirectory(options.exportOnnxPath, "--export-onnx");

  const DistributedRun *run = options.distributed;
  Artifact artifact = loadRunArtifact(options.artifactDir, "train", run);
  DataParallelContext dp;
  if (run)
    dp = createDataParallel(*run, artifact.manifest, options.syncBatchNorm);
  const int rank = run && run->world ? run->world->rank() : 0;
  const int ranks = dp.group.valid() ? dp.size() : 1;
  const bool leader = rank == 0;
  if (!leader)
    mode = Progress::Mode::Off;
  Model model(artifact);
  const TensorSpec &input = model.manifest().input;
  DataSplits data = loadTrainingData(options.data);
  BatchLayout layout =
      resolveBatchLayout(data.train, input, options.repeatTime);
  BatchLoader train(
      data.train, layout,
      {options.batchSize, options.shuffle, options.dropLast, options.seed,
       ranks > 1 ? dp.rank() : 0, ranks});
  std::optional<BatchLoader> eval;
  if (data.eval)
    eval.emplace(*data.eval,
                 resolveBatchLayout(*data.eval, input, options.repeatTime),
                 LoaderOptions{options.batchSize, false, false, options.seed});

  TrainConfig config = makeTrainConfig(options, train.batchesPerEpoch());
  config.settings = trainSettings(options, config, data.train, layout);
  std::optional<CheckpointDirectory> checkpoints;
  std::optional<CheckpointState> resumeState;
  std::string resumePath;
  if (!options.checkpointDir.empty()) {
    checkpoints.emplace(options.checkpointDir, options.keepCheckpoints);
    resumeState = findResumeState(options, *checkpoints, model, config.settings,
                                  resumePath);
  }

  MetricsLog log, rankLog;
  if (!options.logPath.empty() && leader)
    log = MetricsLog(options.logPath, resumeState.has_value());
  if (!options.logPath.empty() && ranks > 1)
    rankLog = MetricsLog(rankLogPath(options.logPath, rank),
                         resumeState.has_value());
  Progress progress(mode, config.totalSteps, train.batchesPerEpoch());
  Trainer trainer(model, train, eval ? &*eval : nullptr, config,
                  {&log, &progress, checkpoints ? &*checkpoints : nullptr,
                   &rankLog});
  // Data parallelism: replicas start equal (the artifact's weights), then
  // the parameters are sharded as the plan asks, then a checkpoint (whole
  // or merged from shards) is loaded into that layout.
  checkReplicated(dp, model.params());
  trainer.enableDataParallel(dp, shardingModeOf(artifact.manifest));
  rankLog.rankStart(rank, ranks, shardingModeName(trainer.shardingMode()));
  if (resumeState) {
    trainer.restore(*resumeState, resumePath);
    // Ranks that read different checkpoints (no shared directory) must not
    // train on silently; fsdp holds no full replica to compare.
    if (trainer.shardingMode() != ShardingMode::Fsdp)
      checkReplicated(dp, model.params());
  }
  TrainSummary summary = trainer.run();
  // One process has no rank log: its "end" event goes to the run's log.
  (ranks > 1 ? rankLog : log)
      .rankEnd(summary.stepsDone, trainer.footprint(), peakResidentBytes());
  writeOutputs(options, artifact, trainer, model, rank, ranks);
  if (mode != Progress::Mode::Off)
    printSummary(summary, config);
}

} // namespace snn::runtime
