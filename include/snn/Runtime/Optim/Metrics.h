//===- Metrics.h - What training and evaluation report ----------*- C++ -*-===//
#ifndef SNN_RUNTIME_OPTIM_METRICS_H
#define SNN_RUNTIME_OPTIM_METRICS_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace snn::runtime {

/// One optimizer step.
struct StepMetrics {
  int64_t epoch = 0;
  int64_t step = 0; // 0-based global step index s
  double loss = 0.0;
  double accuracy = 0.0;
  double lr = 0.0;
  double samplesPerSecond = 0.0;
  double seconds = 0.0; // zero_grad to optimizer update
  /// --skip-nonfinite-steps: the loss was not finite and the update was not
  /// applied.
  bool skipped = false;
  /// Runs with checkpoints: the training thread's time on them after this
  /// step (taking the state, its collectives, waiting for the previous save),
  /// and whether a background save was being written when the step began.
  bool checkpointing = false;
  double checkpointSeconds = 0.0;
  bool checkpointWriting = false;
  /// Each neuron layer's firing rate in this step (the PyTorch module's name,
  /// spikes over neurons x steps x samples of the global batch).
  std::vector<std::pair<std::string, double>> firingRates;
  /// The L2 norm of each parameter group's gradient (a group: the parameters of one PyTorch
  /// module, "conv_fc.0" for conv_fc.0.weight and .bias), averaged over the dp ranks, before
  /// the update; empty where not measured (tp, fsdp_tp and pipeline runs).
  std::vector<std::pair<std::string, double>> gradNorms;
};

/// A pass over a whole split in eval mode; averages over samples.
struct EvalMetrics {
  double loss = 0.0;
  double accuracy = 0.0;
  int64_t samples = 0;
  double seconds = 0.0;
};

/// One epoch: loss and accuracy averaged over its steps.
struct EpochMetrics {
  int64_t epoch = 0;
  int64_t steps = 0;
  double loss = 0.0;
  double accuracy = 0.0;
  bool hasEval = false;
  EvalMetrics eval;
  double seconds = 0.0;
  /// Each neuron layer's firing rate over the epoch's steps (this invocation's).
  std::vector<std::pair<std::string, double>> firingRates;
};

/// A pipeline rank's bubble (the rank log's end event): the share of the
/// pipeline phase of its steps it spent waiting, measured (averaged over
/// steps) and as the schedule's unit-cost simulation predicts for this rank
/// (`theoretical`) and for the whole pipeline (`pipeline`).
struct BubbleReport {
  double measured = 0.0;
  double theoretical = 0.0;
  double pipeline = 0.0;
  const char *schedule = "";
};

/// What one rank holds between steps, in bytes (ParameterSharding.h).
struct MemoryFootprint {
  int64_t paramBytes = 0;
  int64_t gradBytes = 0;
  int64_t optimizerStateBytes = 0;
  /// Of gradBytes, dp's and zero's flat gradient buckets: allocated with the sharding,
  /// before any step, and held for the whole run.
  int64_t bucketBytes = 0;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_OPTIM_METRICS_H
