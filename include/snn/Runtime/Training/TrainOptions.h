//===- TrainOptions.h - The flags of `snn-run train` ------------*- C++ -*-===//
//
// What a training run is asked to do, as snn-run's command line parsed it.
// The Training layer reads it (TrainSettings.h: how the flags combine, the
// run's numbers and the settings a resume must repeat); runTrain
// (Commands/TrainCommand.h) runs it.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_TRAINING_TRAINOPTIONS_H
#define SNN_RUNTIME_TRAINING_TRAINOPTIONS_H

#include "snn/Runtime/Data/DataSource.h"
#include "snn/Runtime/Execution/KernelChoice.h"
#include "snn/Runtime/Optim/Loss.h"
#include "snn/Runtime/Optim/LrSchedule.h"
#include "snn/Runtime/Optim/Optimizer.h"
#include "snn/Runtime/Training/CheckpointSaver.h"
#include "snn/Runtime/Training/Progress.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace snn::runtime {

struct DistributedRun;

/// The flags of `snn-run train` (docs/snn-run.md), parsed; 0 / empty = not
/// given. snn-run's command line checks each value on its own (names, ranges);
/// runTrain checks how they combine (validateTrainOptions).
struct TrainOptions {
  std::string artifactDir;
  DataOptions data;
  /// --freeze NAME...: parameters training must leave unchanged.
  std::vector<std::string> freeze;
  int64_t repeatTime = 0;
  int64_t epochs = 0;
  int64_t steps = 0;
  int64_t batchSize = 0;
  double lr = 0.0;
  OptimizerKind optimizer = OptimizerKind::Sgd;
  double momentum = 0.0;
  std::optional<double> weightDecay; // default: the optimizer's
  ScheduleKind schedule = ScheduleKind::Constant;
  int64_t stepSize = 0;
  double gamma = 0.1;
  double etaMin = 0.0;
  LossKind loss = LossKind::Mse;
  uint64_t seed = 0;
  bool shuffle = true;
  bool dropLast = true;
  bool evalEveryEpoch = true;
  std::string logPath;
  /// --tensorboard DIR: rank 0 writes the log's step and epoch numbers as
  /// TensorBoard scalars (Observability/TensorBoardLog.h).
  std::string tensorboardDir;
  std::string checkpointDir;
  int64_t checkpointEvery = 0;
  int keepCheckpoints = 2;
  bool resume = false;
  /// --checkpoint-sync: each checkpoint written before training goes on.
  bool checkpointSync = false;
  /// --checkpoint-errors: what a failed save does.
  CheckpointErrors checkpointErrors = CheckpointErrors::Stop;
  /// --skip-nonfinite-steps: a step with a NaN or infinite loss changes
  /// nothing and training goes on (default: the run stops).
  bool skipNonFiniteSteps = false;
  /// --no-firing-rates: the step and epoch events carry no firing rates.
  bool noFiringRates = false;
  /// --no-step-arena: a step's large tensors come from the heap instead of the step
  /// arena laid out from a recorded step (StepArena.h).
  bool noStepArena = false;
  int64_t stopAfter = 0;
  std::string saveParamsDir;
  std::string exportOnnxPath;
  int threads = 0;
  /// --recompute: training forwards keep only each segment's input (spikes as
  /// bits) and recompute the rest in the backward (Executor::runRecomputingSegments).
  bool recompute = false;
  /// --spike-linear-density and --no-fusion (KernelChoice.h).
  KernelChoice kernels;
  /// Progress output: auto (bar on a terminal, lines otherwise), bar, lines
  /// or none.
  ProgressSetting progress = ProgressSetting::Auto;
  /// SyncBatchNorm over the dp ranks (--no-sync-bn turns it off).
  bool syncBatchNorm = true;
  /// --comm-stats: rank 0 prints each step's collectives (CommStatsTable).
  bool commStats = false;
  /// --trace FILE (pipelines): rank 0 writes every rank's spans as one
  /// Chrome trace (PipelineTrace.h).
  std::string tracePath;
  /// The multi-rank run this process belongs to (snn-run --nproc, torchrun);
  /// null: one process.
  const DistributedRun *distributed = nullptr;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_TRAINING_TRAINOPTIONS_H
