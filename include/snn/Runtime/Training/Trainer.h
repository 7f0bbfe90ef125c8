//===- Trainer.h - The training loop ----------------------------*- C++ -*-===//
//
// One optimizer step per batch, as docs/training.md specifies: zero grads,
// forward in training mode, loss on the firing rate, backward, update with
// the step's learning rate. The trainer owns the run's position (step,
// epoch, batch) and everything a checkpoint needs, so that stopping after any
// step and resuming gives the same weights as an uninterrupted run.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_TRAINING_TRAINER_H
#define SNN_RUNTIME_TRAINING_TRAINER_H

#include "snn/Runtime/Data/BatchLoader.h"
#include "snn/Runtime/Checkpoint/Checkpoint.h"
#include "snn/Runtime/Checkpoint/CheckpointDirectory.h"
#include "snn/Runtime/Optim/Loss.h"
#include "snn/Runtime/Optim/LrSchedule.h"
#include "snn/Runtime/Optim/Metrics.h"
#include "snn/Runtime/Training/MetricsLog.h"
#include "snn/Runtime/Execution/MeshContext.h"
#include "snn/Runtime/Execution/Model.h"
#include "snn/Runtime/Optim/Optimizer.h"
#include "snn/Runtime/Sharding/ParameterSharding.h"
#include "snn/Runtime/Training/Progress.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace snn::runtime {

struct DataParallelContext;
class ParameterPartition;
class CommStatsTable;
class PipelineEngine;
class PipelineTrace;

struct TrainConfig {
  /// Optimizer steps of the whole run (--steps, or --epochs x batches).
  int64_t totalSteps = 0;
  OptimizerConfig optimizer;
  /// Its totalSteps must equal the run's (cosine).
  LrSchedule schedule;
  LossKind loss = LossKind::Mse;
  /// Seeds the CPU generator before the first step (the data order's seed is
  /// the loader's).
  uint64_t seed = 0;
  /// Save a checkpoint after every N steps (0: only at the end).
  int64_t checkpointEvery = 0;
  /// End this invocation after N steps (0: run to totalSteps).
  int64_t stopAfter = 0;
  /// Evaluate on the eval loader at the end of every epoch.
  bool evalEveryEpoch = true;
  /// Stored in checkpoints and compared on resume: (flag, value).
  std::vector<std::pair<std::string, std::string>> settings;
};

/// Where the run's output goes; every member may be null. In a multi-rank
/// run every rank passes its checkpoint directory (sharded checkpoints are
/// written by all ranks; replicated ones by rank 0 alone).
struct TrainSinks {
  MetricsLog *log = nullptr;
  Progress *progress = nullptr;
  CheckpointDirectory *checkpoints = nullptr;
  /// This rank's own log (multi-rank runs): the same step and epoch events.
  MetricsLog *rankLog = nullptr;
  /// --comm-stats: each step's collectives (partitioned artifacts).
  CommStatsTable *commStats = nullptr;
};

struct TrainSummary {
  int64_t stepsDone = 0; // by this invocation
  int64_t step = 0;      // of the run, after this invocation
  double seconds = 0.0;  // spent in training steps
  int64_t samples = 0;   // trained by this invocation
  bool finished = false; // step == totalSteps
  StepMetrics lastStep;
  bool hasEpoch = false;
  EpochMetrics lastEpoch;
};

class Trainer {
public:
  /// `eval` may be null (no eval split). The model's parameters form the
  /// optimizer's single group.
  Trainer(Model &model, BatchLoader &train, BatchLoader *eval,
          TrainConfig config, TrainSinks sinks);
  ~Trainer();

  /// Data-parallel training over `dp`'s group (the loaders must yield this
  /// rank's shard of every global batch): the model synchronises BatchNorm
  /// and Dropout, gradients are averaged over the group by a bucketed
  /// all-reduce that overlaps with backward, and the step metrics are the
  /// global batch's. `mode` picks where parameters, gradients and optimizer
  /// state live (ParameterSharding.h). Collective; call before restore() and
  /// run() on every rank. `dp` must outlive the trainer.
  void enableDataParallel(const DataParallelContext &dp, ShardingMode mode);

  /// A partitioned artifact (tensor parallelism) on `mesh`: every step
  /// counts the collectives of the program's ops (reset before the step; the
  /// step events of the logs and --comm-stats report them); checkpoints are
  /// whole (PartitionedCheckpoint.h: gathered over the mesh, written by rank
  /// 0); the run id is rank 0's. Call before restore() and run() on every
  /// rank; `mesh` and `partition` must outlive the trainer.
  void enableTensorParallel(const MeshContext &mesh,
                            const ParameterPartition &partition);

  /// A pipeline artifact (mode pp): every step runs `engine`'s schedule
  /// over the plan's microbatches (PipelineEngine.h); the step's loss and
  /// accuracy come from the last stage (broadcast over the pp group, summed
  /// over `dp`'s group when it is valid), and with a dp axis the gradients
  /// are averaged over it after the flush and BatchNorm's running statistics
  /// are dp member 0's; evaluation runs through the stages; checkpoints are
  /// whole (PipelineCheckpoint.h: gathered over the pp group, written by
  /// rank 0 of `mesh`'s world). Call before restore() and run() on every
  /// rank; the arguments must outlive the trainer. `trace` (may be null)
  /// records the spans of --trace.
  void enablePipeline(PipelineEngine &engine, const MeshContext &mesh,
                      const DataParallelContext &dp, PipelineTrace *trace);
  /// Pipelines: this rank's bubble, the share of each step's pipeline phase
  /// it waited, averaged over this invocation's steps (0 without steps).
  double measuredBubble() const;

  /// Continues from `state` instead of starting at step 0: model, optimizer,
  /// generator and position. `where` names the checkpoint in messages.
  void restore(const CheckpointState &state, const std::string &where);

  /// Trains until totalSteps (or stopAfter) steps; saves the final
  /// checkpoint when the sinks have a checkpoint directory. Throws Error on a
  /// non-finite loss, naming the step and epoch.
  TrainSummary run();

  /// The state a checkpoint taken now would hold.
  CheckpointState capture() const;

  int64_t step() const { return position.step; }
  ShardingMode shardingMode() const { return sharding->mode(); }
  /// What this rank holds between steps.
  MemoryFootprint footprint() const { return sharding->footprint(); }
  /// Collective: every parameter's full values in the model's store until
  /// releaseParameters() (for writing the trained weights).
  void materializeParameters() { sharding->materialize(); }
  void releaseParameters() { sharding->release(); }

private:
  struct Position {
    int64_t step = 0, epoch = 0, batch = 0;
    double lossSum = 0.0, accuracySum = 0.0, seconds = 0.0;
    int64_t steps = 0; // in the current epoch
  };

  StepMetrics trainStep(const Batch &batch);
  /// trainStep of a pipeline (TrainerPipeline.cpp).
  StepMetrics pipelineStep(const Batch &batch);
  void savePipelineCheckpoint();
  EvalMetrics evaluateSplit(BatchLoader &loader);
  void checkLoss(float loss) const;
  /// Logs the epoch's summary (a partial one when the run ends inside it)
  /// and, for a complete epoch, moves to the next.
  void endEpoch(TrainSummary &summary, bool complete);
  void saveCheckpoint();
  /// A partitioned run's whole checkpoint (collective; rank 0 writes).
  void saveWholeCheckpoint();
  /// Writes a finished step to the sinks.
  void report(const StepMetrics &metrics);
  /// A fresh run id (CheckpointState::runId), the same on every rank.
  uint64_t drawRunId() const;

  Model &model;
  BatchLoader &train;
  BatchLoader *eval;
  TrainConfig config;
  TrainSinks sinks;
  std::unique_ptr<ParameterSharding> sharding;
  Position position;
  bool restored = false;
  bool labelsChecked = false;
  int64_t savedStep = -1;
  /// Written into every checkpoint; a resumed run keeps the checkpoint's.
  uint64_t runId = 0;
  const DataParallelContext *dataParallel = nullptr;
  const MeshContext *mesh = nullptr;
  const ParameterPartition *partition = nullptr;
  /// The collectives of the last step (partitioned runs).
  std::vector<CommCount> stepComm;
  /// Pipelines: the engine, the dp group that averages gradients (null:
  /// none), the trace, and each step's measured bubble summed.
  PipelineEngine *pipeline = nullptr;
  const DataParallelContext *pipelineDp = nullptr;
  PipelineTrace *trace = nullptr;
  double bubbleSum = 0.0;
  int64_t bubbleSteps = 0;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_TRAINING_TRAINER_H
