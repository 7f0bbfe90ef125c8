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
#include "snn/Runtime/Execution/FiringCounts.h"
#include "snn/Runtime/Execution/Model.h"
#include "snn/Runtime/Optim/Optimizer.h"
#include "snn/Runtime/Sharding/ParameterSharding.h"
#include "snn/Runtime/Training/CheckpointSaver.h"
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
  /// In the background or not, and what a failed save does.
  CheckpointPolicy checkpointPolicy;
  /// A step whose loss is NaN or infinite changes nothing (no update,
  /// gradients dropped, buffers as before it) and training goes on; without
  /// it the run stops.
  bool skipNonFiniteSteps = false;
  /// Count each neuron layer's spikes per step and log the rates.
  bool firingRates = true;
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

/// An invocation's step times (checkpointing included) by what checkpoints
/// did to them, for the summary line.
struct CheckpointTimes {
  int64_t saves = 0;            // steps after which a save began
  double saveSeconds = 0.0;     // their time
  double checkpointSeconds = 0.0; // of it, on checkpointing
  int64_t writingSteps = 0;     // other steps begun while a save was written
  double writingSeconds = 0.0;
  int64_t otherSteps = 0;
  double otherSeconds = 0.0;
};

struct TrainSummary {
  int64_t stepsDone = 0; // by this invocation
  int64_t skippedSteps = 0; // of them, skipped (--skip-nonfinite-steps)
  int64_t step = 0;      // of the run, after this invocation
  double seconds = 0.0;  // spent in training steps
  int64_t samples = 0;   // trained by this invocation
  bool finished = false; // step == totalSteps
  StepMetrics lastStep;
  bool hasEpoch = false;
  EpochMetrics lastEpoch;
  CheckpointTimes checkpoints;
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
  /// checkpoint when the sinks have a checkpoint directory, and waits for it.
  /// Throws Error on a non-finite loss (unless skipNonFiniteSteps), naming
  /// the step, the epoch and (several ranks) the first rank whose own loss
  /// was not finite; on non-finite weights at a save point; on a failed save
  /// (CheckpointPolicy). A save in flight is finished first.
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

  /// One step of run(): train, log, the epoch's end, the save point.
  void runStep(TrainSummary &summary);
  StepMetrics trainStep(const Batch &batch);
  /// trainStep of a pipeline (TrainerPipeline.cpp).
  StepMetrics pipelineStep(const Batch &batch);
  void savePipelineCheckpoint();
  EvalMetrics evaluateSplit(BatchLoader &loader);
  /// Whether the step's loss is finite (`loss`, the same on every rank;
  /// `ownLoss`, this rank's part of it). When it is not: false with
  /// skipNonFiniteSteps, else the run stops naming the first rank whose own
  /// loss was not finite (collective then, on every rank alike).
  bool acceptLoss(double loss, double ownLoss);
  /// skipNonFiniteSteps, after a finite loss: whether every gradient is
  /// finite on every rank (a NaN input that no neuron lets through reaches
  /// the gradients, not the loss). Collective over the run's ranks.
  bool gradientsFinite() const;
  /// A skipped step: its gradients dropped, the buffers put back.
  void skipStep(const std::vector<at::Tensor> &buffersBefore);
  /// The end of a step whose loss was `accepted` (acceptLoss): the update at
  /// `lr` once the gradients are finite too (skipNonFiniteSteps), else the
  /// skip. Returns whether the update ran.
  bool updateOrSkip(bool accepted, double lr, const std::vector<at::Tensor> &buffersBefore);
  /// The buffers before a step that may be skipped (empty: none will be).
  std::vector<at::Tensor> buffersBeforeStep() const;
  /// The epoch's summary (a partial one when the run ends inside it); for a
  /// complete epoch, moves to the next.
  EpochMetrics closeEpoch(bool complete);
  void reportEpoch(const EpochMetrics &metrics, TrainSummary &summary);
  /// The save point after a step: saves when one is due, else takes the
  /// result of a finished background save. Returns the seconds it took.
  double checkpointAfterStep();
  void saveCheckpoint();
  /// A partitioned run's whole checkpoint (collective; rank 0 writes).
  void saveWholeCheckpoint();
  /// zero / fsdp: every rank's pieces (collective).
  void saveShardedCheckpoint();
  /// Finishes the save in flight, then throws Error(message).
  [[noreturn]] void stopRun(const std::string &message);
  void warn(const std::string &message) const;
  /// Writes a finished step (of batch `batch` of its epoch) to the sinks.
  void report(const StepMetrics &metrics, int64_t batch);
  /// The group of all ranks of the run: the mesh's world, else the dp
  /// group; null in one process.
  const dist::Group *runGroup() const;
  /// A fresh run id (CheckpointState::runId), the same on every rank.
  uint64_t drawRunId() const;
  /// The step's firing counts summed over the mesh's ranks (partitioned
  /// runs; dp runs sum them with the step's loss), added to the epoch's.
  void finishStepFiring(StepMetrics &metrics);
  /// The epoch's rates, and one warning per layer that stayed silent or
  /// saturated for the whole epoch (rank 0).
  void closeEpochFiring(EpochMetrics &metrics, bool complete);
  /// A pipeline's step counts (TrainerPipeline.cpp): every stage's layers, summed over the
  /// world (collective).
  void finishPipelineFiring(StepMetrics &metrics);
  /// Each parameter group's gradient norm (StepMetrics::gradNorms) once backward has
  /// averaged the gradients: the whole model's, every module on every rank; collective
  /// under fsdp (over dp) and for partitioned or pipeline programs (over the world).
  std::vector<std::pair<std::string, double>> gradientNorms() const;
  /// How many ranks hold the same values of this rank's piece of parameter `name`'s
  /// gradient (partitioned or pipeline programs; `fsdp`: each dp rank holds its own chunk).
  double gradientCopies(const std::string &name, bool fsdp) const;

  Model &model;
  BatchLoader &train;
  BatchLoader *eval;
  TrainConfig config;
  TrainSinks sinks;
  std::unique_ptr<ParameterSharding> sharding;
  /// With a checkpoint directory.
  std::unique_ptr<CheckpointSaver> saver;
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
  /// The spikes each neuron layer fired in this step and in the epoch so far
  /// (FiringCounts.h), summed over the ranks.
  FiringCounts stepFiring, epochFiring;
  /// A pipeline: the neuron layers of every stage, in model order (found at the first step).
  std::vector<LayerFiring> pipelineLayers;
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
