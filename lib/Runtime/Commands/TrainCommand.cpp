//===- TrainCommand.cpp - The `snn-run train` command ---------------------===//
//
// Glue only: reads the artifact and the data, builds the Trainer with its
// sinks (log, progress, checkpoints), resumes if asked, and writes the
// outputs at the end. The training itself is Trainer.cpp.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Commands/TrainCommand.h"
#include "snn/Runtime/Execution/EventKernelChoice.h"
#include "snn/Runtime/Checkpoint/CheckpointLock.h"
#include "snn/Runtime/Checkpoint/OnnxExport.h"
#include "snn/Runtime/Checkpoint/ParamsIO.h"
#include "snn/Runtime/Checkpoint/PartitionedCheckpoint.h"
#include "snn/Runtime/Checkpoint/PipelineCheckpoint.h"
#include "snn/Runtime/Checkpoint/ShardedCheckpoint.h"
#include "snn/Runtime/Checkpoint/TrainCheckpoint.h"
#include "snn/Runtime/Commands/CommandSupport.h"
#include "snn/Runtime/Autograd/SpikeLinearAutograd.h"
#include "snn/Runtime/Commands/FreezeParameters.h"
#include "snn/Runtime/Execution/DataParallel.h"
#include "snn/Runtime/Execution/PipelineLayout.h"
#include "snn/Runtime/Observability/TensorBoardLog.h"
#include "snn/Runtime/Pipeline/PipelineEngine.h"
#include "snn/Runtime/Pipeline/PipelineTrace.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/StepArena.h"
#include "snn/Runtime/Support/TensorMemory.h"
#include "snn/Runtime/Training/CommStatsTable.h"
#include "snn/Runtime/Training/TrainSettings.h"
#include "snn/Schema/MeshAxes.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

namespace meshaxis = snn::schema::meshaxis;

namespace snn::runtime {

namespace {

/// This rank's place in the run: the mesh, the dp group that splits the
/// batch and the split parameters (a partitioned artifact's). Not movable:
/// the partition points at the mesh.
struct RankPlace {
  RankPlace(const DistributedRun *run, const Artifact &artifact, bool syncBatchNorm)
      : mesh(createRunMesh(run, artifact.manifest)),
        dp(createDataParallel(mesh, syncBatchNorm)), partition(artifact.manifest, mesh),
        partitioned(artifact.run.partitioned), pipeline(artifact.run.pipeline.has_value()),
        rank(mesh.worldRank()),
        worldSize(mesh.world().valid() ? mesh.world().size() : 1),
        dpRanks(dp.group.valid() ? dp.size() : 1) {}
  RankPlace(const RankPlace &) = delete;
  RankPlace &operator=(const RankPlace &) = delete;

  MeshContext mesh;
  DataParallelContext dp;
  ParameterPartition partition;
  bool partitioned;
  bool pipeline; // plan mode pp
  int rank;
  int worldSize;
  int dpRanks; // ranks that split a global batch
};

/// The checkpoint to continue from, if --resume finds one (this rank's part
/// of it, for a partitioned artifact). Without --resume a directory that
/// already holds checkpoints is refused rather than mixed with a new run's.
std::optional<CheckpointState> findResumeState(const TrainOptions &options,
                                               const CheckpointDirectory &dir,
                                               const Model &model,
                                               const Settings &settings,
                                               const RankPlace &place,
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
    if (place.rank == 0)
      std::cerr << "snn-run: no checkpoint in '" << dir.path()
                << "' yet; starting at step 0" << std::endl;
    return std::nullopt;
  }
  CheckpointState state = readAnyCheckpoint(where);
  // A pipeline's stages first (checked against the whole model), then their tp parts.
  if (place.pipeline)
    state = pipelineLocalCheckpoint(state, model.params(), model.manifest(), where);
  if (place.partitioned)
    state = localCheckpoint(state, place.partition, where);
  // Another model is the more fundamental mismatch: report it first.
  checkSameModel(state, model.params(), where);
  checkResumeSettings(state.settings, settings, where);
  return state;
}

/// In a multi-rank run every rank writes its replica to DIR/rank<R> (tests
/// compare them); rank 0 alone exports the ONNX model. Sharded parameters
/// are gathered for it on every rank, split ones whole (collective).
void writeOutputs(const TrainOptions &options, const Artifact &artifact,
                  Trainer &trainer, const Model &model, const RankPlace &place) {
  if (options.saveParamsDir.empty() && options.exportOnnxPath.empty())
    return;
  trainer.materializeParameters();
  // Split parameters whole over tp (collective), then a pipeline's stages joined over pp.
  ParameterStore whole = place.partition.wholeStore(model.params());
  if (place.pipeline)
    whole = gatherPipelineStore(whole, model.manifest(),
                                place.mesh.groupIfSplit(meshaxis::kPipeline));
  if (!options.saveParamsDir.empty()) {
    std::string dir = options.saveParamsDir;
    if (place.worldSize > 1) {
      dir = (std::filesystem::path(dir) / ("rank" + std::to_string(place.rank)))
                .string();
      std::filesystem::create_directories(dir);
    }
    saveParamsNpy(dir, whole);
  }
  if (!options.exportOnnxPath.empty() && place.rank == 0) {
    const Manifest &manifest = artifact.manifest;
    std::string program = (std::filesystem::path(artifact.dir) /
                           manifest.programForRank(0).file)
                              .string();
    if (place.pipeline)
      exportTrainedPipelineOnnx(stageProgramPaths(artifact.dir, manifest),
                                manifest.input.name, manifest.output.name, whole,
                                options.exportOnnxPath);
    else
      exportTrainedOnnx(program, whole, options.exportOnnxPath);
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

/// An elastic restart on another number of ranks says what changed, once.
void announceResizedMesh(const TrainOptions &options, const Artifact &artifact,
                         const RankPlace &place) {
  if (artifact.run.plannedWorldSize == place.worldSize)
    return;
  std::cerr << "snn-run: " << options.artifactDir << " is planned for "
            << artifact.run.plannedWorldSize << " ranks; running on " << place.worldSize
            << " ranks, its dp axis resized to " << place.dpRanks << " (the global batch of "
            << options.batchSize << " unchanged)" << std::endl;
}

/// The run's logs: rank 0's --log, which --tensorboard follows, and in a
/// multi-rank run every rank's own. Not movable: the log's follower points
/// at the TensorBoard writer.
struct RunLogs {
  RunLogs() = default;
  RunLogs(const RunLogs &) = delete;
  RunLogs &operator=(const RunLogs &) = delete;

  MetricsLog log, rankLog;
  std::optional<TensorBoardLog> tensorboard;
};

void openLogs(const TrainOptions &options, int rank, int worldSize, bool resuming,
              RunLogs &logs) {
  if (!options.logPath.empty() && rank == 0)
    logs.log = MetricsLog(options.logPath, resuming);
  if (!options.logPath.empty() && worldSize > 1)
    logs.rankLog = MetricsLog(rankLogPath(options.logPath, rank), resuming);
  if (!options.tensorboardDir.empty() && rank == 0) {
    TensorBoardLog &tensorboard = logs.tensorboard.emplace(options.tensorboardDir);
    logs.log.follow([&tensorboard](const std::string &line) { tensorboard.event(line); });
  }
}

/// The mean step time with a save, while one was written and otherwise: what
/// checkpoints cost the training steps.
void printCheckpointTimes(const CheckpointTimes &times, const CheckpointPolicy &policy) {
  if (times.saves == 0)
    return;
  auto mean = [](double seconds, int64_t steps) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.4f s", seconds / double(std::max<int64_t>(steps, 1)));
    return std::string(text);
  };
  std::cerr << "snn-run: checkpoints: " << times.saves << " save" << (times.saves > 1 ? "s" : "")
            << (policy.background ? " (background)" : " (synchronous)") << "; mean step "
            << mean(times.saveSeconds, times.saves) << " with a save ("
            << mean(times.checkpointSeconds, times.saves) << " of it checkpointing)";
  if (times.writingSteps > 0)
    std::cerr << ", " << mean(times.writingSeconds, times.writingSteps)
              << " while one was written";
  if (times.otherSteps > 0)
    std::cerr << ", " << mean(times.otherSeconds, times.otherSteps) << " without";
  std::cerr << std::endl;
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
  if (summary.skippedSteps > 0)
    std::cerr << ", " << summary.skippedSteps << " skipped (loss or gradients not finite)";
  if (!summary.finished)
    std::cerr << "; continue with --resume";
  std::cerr << std::endl;
  printCheckpointTimes(summary.checkpoints, config.checkpointPolicy);
}

} // namespace

namespace {

/// Every rank starts from the same weights (the artifact's, or after
/// --resume the checkpoint's): over the dp group, and over the other mesh
/// axes for the parameters replicated there. fsdp holds no full replica
/// between steps: `afterResume` skips it.
void checkStartingWeights(const RankPlace &place, Trainer &trainer,
                          const Model &model, bool afterResume) {
  if (afterResume && trainer.shardingMode() == ShardingMode::Fsdp)
    return;
  checkReplicated(place.dp, model.params());
  checkReplicatedOverMesh(place.mesh, place.partition, model.params());
}

struct TrainData {
  DataSplits data;
  BatchLayout layout;
  std::optional<BatchLoader> train, eval;
};

/// The splits and their loaders; the training loader yields this rank's
/// shard of every global batch.
void loadData(const TrainOptions &options, const TensorSpec &input,
              const RankPlace &place, TrainData &out) {
  out.data = loadTrainingData(options.data);
  out.layout = resolveBatchLayout(out.data.train, input, options.repeatTime);
  out.train.emplace(
      out.data.train, out.layout,
      LoaderOptions{options.batchSize, options.shuffle, options.dropLast,
                    options.seed, place.dpRanks > 1 ? place.dp.rank() : 0,
                    place.dpRanks});
  if (out.data.eval)
    out.eval.emplace(*out.data.eval,
                     resolveBatchLayout(*out.data.eval, input, options.repeatTime),
                     LoaderOptions{options.batchSize, false, false, options.seed});
}

/// dp / zero / fsdp over the dp group, tp's counters and checkpoints, or a
/// pipeline's engine (returned; collective over the pp group).
/// --recompute: one process or data-parallel replicas of a whole program.
void enableRecomputation(const Artifact &artifact, const RankPlace &place, Model &model) {
  const Manifest &manifest = artifact.manifest;
  std::string mode = schema::nameOf(manifest.plan.mode);
  if (place.pipeline)
    throw Error("--recompute recomputes segments of one program; this artifact's plan mode "
                "is 'pp', whose stages recompute as the plan's pp_memopt_stages say");
  if (shardingModeOf(manifest) == ShardingMode::Fsdp)
    throw Error("--recompute trains one process, data-parallel replicas or tensor-parallel "
                "ranks (modes none, dp, zero, tp); this artifact's plan mode is '" + mode +
                "', whose parameters are gathered step by step");
  model.setRecomputation(true);
}

std::unique_ptr<PipelineEngine>
enableParallelism(const TrainOptions &options, const Artifact &artifact,
                  const RankPlace &place, Model &model, Trainer &trainer,
                  PipelineTrace &trace) {
  if (options.recompute)
    enableRecomputation(artifact, place, model);
  if (!place.pipeline) {
    if (!options.tracePath.empty())
      throw Error("--trace records a pipeline's schedule; this artifact's plan mode is '" +
                  std::string(schema::nameOf(artifact.manifest.plan.mode)) + "', not 'pp'");
    trainer.enableDataParallel(place.dp, shardingModeOf(artifact.manifest));
    if (place.partitioned)
      trainer.enableTensorParallel(place.mesh, place.partition);
    return nullptr;
  }
  PipelinePlace where = pipelinePlaceOf(artifact, place.mesh);
  auto engine = std::make_unique<PipelineEngine>(model, where, options.loss);
  trainer.enablePipeline(*engine, place.mesh, place.dp,
                         options.tracePath.empty() ? nullptr : &trace);
  if (place.partitioned) // tensor-parallel stages: whole checkpoints gather over tp
    trainer.enableTensorParallel(place.mesh, place.partition);
  return engine;
}

BubbleReport bubbleOf(const PipelineEngine &engine, const Trainer &trainer) {
  BubbleReport report;
  report.measured = trainer.measuredBubble();
  report.theoretical = engine.theoreticalBubble();
  report.pipeline = engine.pipelineBubble();
  report.schedule = schema::nameOf(engine.place().layout.schedule);
  return report;
}

/// The end event: what the rank holds and measured, with the plan's prediction next to
/// the measured step time, communication wait and memory (the steps' tensor peak less
/// what was there before them, plus the parameters and dp's gradient buckets, which are
/// there before them: what the planner counts).
RankEnd rankEndOf(const TrainSummary &summary, const Trainer &trainer,
                  const schema::PlanSpec &plan, const OptimizerConfig &optimizer,
                  const PipelineEngine *pipeline, const TensorBytes *tensors,
                  double blockedSeconds) {
  RankEnd end;
  end.steps = summary.stepsDone;
  end.footprint = trainer.footprint();
  end.peakResidentBytes = peakResidentBytes();
  end.spikeLinear = spikeLinearCounts();
  end.spikeConv = spikeConvCounts();
  end.eventKernels = eventKernelLayers();
  end.spikingBlocks = spikingBlockCounts();
  end.spikeBits = spikeBitsCounts();
  end.recomputation = recomputationCounts();
  if (StepArena::installed())
    end.stepArena = StepArena::stats();
  if (tensors)
    end.tensors = *tensors;
  if (pipeline)
    end.bubble = bubbleOf(*pipeline, trainer);
  if (plan.prediction && summary.stepsDone > 0) {
    PlanCheck check;
    check.predicted = *plan.prediction;
    check.optimizerStates = optimizerStatesOf(optimizer);
    check.stepSeconds = summary.seconds / double(summary.stepsDone);
    check.commSeconds = blockedSeconds / double(summary.stepsDone);
    if (tensors)
      check.memoryBytes = tensors->peak - tensors->beforeSteps + end.footprint.paramBytes +
                          end.footprint.bucketBytes;
    end.planCheck = check;
  }
  return end;
}

/// Runs the steps, measuring what the end event (written to `endLog`) reports.
TrainSummary runMeasured(Trainer &trainer, const schema::PlanSpec &plan,
                         const OptimizerConfig &optimizer, const PipelineEngine *pipeline,
                         MetricsLog &endLog) {
  TensorBytes tensors;
  TensorMemory::resetPeak();
  tensors.beforeSteps = TensorMemory::liveBytes();
  double blockedBefore = dist::blockedSeconds();
  TrainSummary summary = trainer.run();
  tensors.peak = TensorMemory::peakBytes();
  endLog.rankEnd(rankEndOf(summary, trainer, plan, optimizer, pipeline,
                           TensorMemory::installed() ? &tensors : nullptr,
                           dist::blockedSeconds() - blockedBefore));
  return summary;
}

} // namespace

namespace {

/// The process's settings for a training run and the checks of its output
/// paths, before anything else.
void setUpProcess(const TrainOptions &options) {
  // A file-size limit (ulimit -f) fails the write that crosses it, reported
  // like a full disk, instead of killing the run with SIGXFSZ.
  std::signal(SIGXFSZ, SIG_IGN);
  // Before any tensor, so that the end event's tensor bytes count them all; the arena
  // first, so that they count what it hands out.
  if (!options.noStepArena)
    StepArena::install();
  TensorMemory::install();
  setIntraOpThreads(options.threads);
  applyKernelChoice(options.kernels);
  checkParentDirectory(options.logPath, "--log");
  checkParentDirectory(options.exportOnnxPath, "--export-onnx");
  checkParentDirectory(options.tracePath, "--trace");
}

} // namespace

void runTrain(const TrainOptions &options) {
  validateTrainOptions(options);
  setUpProcess(options);
  Progress::Mode mode = Progress::modeFor(options.progress);

  Artifact artifact =
      loadRunArtifact(options.artifactDir, "train", options.distributed);
  freezeParameters(artifact.manifest, options.freeze);
  RankPlace place(options.distributed, artifact, options.syncBatchNorm);
  const bool leader = place.rank == 0;
  if (!leader) // rank 0 alone shows progress
    mode = Progress::Mode::Off;
  if (leader)
    announceResizedMesh(options, artifact, place);
  Model model(artifact);
  model.setMesh(&place.mesh);
  TrainData data;
  loadData(options, model.manifest().input, place, data);
  if (place.pipeline)
    checkPipelineBatches(options, artifact.run.pipeline->microbatches, place.dpRanks,
                         data.data.train.size());

  TrainConfig config = makeTrainConfig(options, data.train->batchesPerEpoch());
  config.settings = trainSettings(options, config, data.data.train, data.layout);
  std::optional<CheckpointDirectory> checkpoints;
  std::optional<CheckpointState> resumeState;
  std::string resumePath;
  // Rank 0 holds the directory for the whole job; its other ranks write under it.
  std::optional<CheckpointLock> lock;
  if (!options.checkpointDir.empty()) {
    if (leader)
      lock.emplace(options.checkpointDir);
    checkpoints.emplace(options.checkpointDir, options.keepCheckpoints);
    resumeState = findResumeState(options, *checkpoints, model, config.settings,
                                  place, resumePath);
  }

  RunLogs logs;
  openLogs(options, place.rank, place.worldSize, resumeState.has_value(), logs);
  Progress progress(mode, config.totalSteps, data.train->batchesPerEpoch());
  CommStatsTable commTable;
  Trainer trainer(model, *data.train, data.eval ? &*data.eval : nullptr, config,
                  {&logs.log, &progress, checkpoints ? &*checkpoints : nullptr,
                   &logs.rankLog, options.commStats && leader ? &commTable : nullptr});
  // Replicas start equal (the artifact's weights), then the parameters are
  // sharded as the plan asks, then a checkpoint (whole or merged from
  // shards; a partitioned run's part of it) is loaded into that layout.
  checkStartingWeights(place, trainer, model, false);
  PipelineTrace trace;
  std::unique_ptr<PipelineEngine> pipeline =
      enableParallelism(options, artifact, place, model, trainer, trace);
  logs.rankLog.rankStart(place.rank, place.worldSize,
                    shardingModeName(trainer.shardingMode()),
                    place.partitioned || place.pipeline ? &place.mesh : nullptr);
  if (resumeState) {
    trainer.restore(*resumeState, resumePath);
    // Ranks that read different checkpoints (no shared directory) must not
    // train on silently.
    checkStartingWeights(place, trainer, model, true);
    if (place.rank == 0)
      std::cerr << "snn-run: resuming at step " << resumeState->step << " from '" << resumePath
                << "'" << std::endl;
  }
  // One process has no rank log: its "end" event goes to the run's log.
  TrainSummary summary = runMeasured(trainer, artifact.manifest.plan, config.optimizer,
                                     pipeline.get(),
                                     place.worldSize > 1 ? logs.rankLog : logs.log);
  if (!options.tracePath.empty())
    trace.write(place.mesh.world().valid() ? &place.mesh.world() : nullptr,
                options.tracePath);
  writeOutputs(options, artifact, trainer, model, place);
  if (mode != Progress::Mode::Off)
    printSummary(summary, config);
}

} // namespace snn::runtime
