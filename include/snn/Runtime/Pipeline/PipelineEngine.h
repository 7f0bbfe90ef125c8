//===- PipelineEngine.h - One rank's stages under a schedule ----*- C++ -*-===//
//
// The runtime half of pipeline parallelism: a rank runs its stages (Model's
// executors, one per stage) in the order its schedule gives (Schedule.h),
// moving boundary tensors with StageTransport.
//
// A training step cuts the rank's batch [T, B, ...] into M microbatches
// along N (dim 1) and runs the rank's actions:
//   F(s, m)  waits for the recv slots of stage s (posted ahead, two actions
//            before they are needed, so transfers overlap compute), makes
//            them leaves that require grad, runs the stage in training mode
//            (neurons start fresh; Dropout draws one process's masks,
//            DropoutReplay.h) and posts the sends of its outputs at once. The last stage computes the
//            microbatch's loss on the firing rate.
//   B(s, m)  backpropagates loss_m / M (last stage) or the gradients
//            received for the stage's sent tensors, then posts the gradients
//            of its recv leaves to stage s - 1.
//   W(s, m)  with a split backward: runs the weight gradients that B queued
//            (WeightGradQueue.h).
// Gradients accumulate in the parameters' .grad in microbatch order. The
// step's sends are waited for after the last action (a send completes only
// when the receiver posts; waiting earlier could deadlock).
//
// Forward-only passes (eval, infer) run each local stage once on the whole
// batch, in stage order; the output appears on the last stage's rank.
//
// Recomputation (pp_memopt_stages): a recomputed stage's F runs without
// recording a graph and keeps only its recv'd inputs (the first stage: its
// slice of the batch, a view); its B first runs the same forward again
// (same Dropout masks, BatchNorm's running statistics left alone), recording
// the graph, then backpropagates through it. The values are those of a run
// without recomputation; the cost is one more forward per microbatch.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_PIPELINE_PIPELINEENGINE_H
#define SNN_RUNTIME_PIPELINE_PIPELINEENGINE_H

#include "snn/Runtime/Execution/PipelineLayout.h"
#include "snn/Runtime/Execution/StageBoundary.h"
#include "snn/Runtime/Optim/Loss.h"
#include "snn/Runtime/Pipeline/PipelineTrace.h"
#include "snn/Runtime/Pipeline/Schedule.h"

#include <ATen/core/Tensor.h>

#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

namespace snn::runtime {

class DropoutReplay;
class Model;
class StageTransport;
class WeightGradQueue;

/// This rank in the pipeline.
struct PipelinePlace {
  PipelineLayout layout;
  int64_t coordinate = 0; ///< pp coordinate (rank in the pp group)
  /// The pp axis' group; null when the axis has one member.
  const dist::Group *group = nullptr;
  /// Data-parallel replica and replicas (microbatch numbering for Dropout).
  int64_t replica = 0, replicas = 1;
};

struct PipelineStepResult {
  /// Whether this rank runs the last stage (only it has the metrics).
  bool hasMetrics = false;
  /// Sum over microbatches of their float32 loss, and correct predictions.
  double lossSum = 0.0;
  int64_t correct = 0;
  /// The step's pipeline phase (first action to the last send) and the
  /// time spent in F, B and W within it.
  double seconds = 0.0;
  double busySeconds = 0.0;
};

class PipelineEngine {
public:
  /// Collective over the pp group (StageTransport). Throws Error if the
  /// schedule cannot run the plan.
  PipelineEngine(Model &model, const PipelinePlace &place, LossKind loss);
  ~PipelineEngine();
  PipelineEngine(const PipelineEngine &) = delete;
  PipelineEngine &operator=(const PipelineEngine &) = delete;

  /// One step's forwards and backwards over M microbatches of `input`
  /// [T, B, ...] and `labels` [B] (B divisible by M); gradients accumulate
  /// in .grad. Dropout consumes the CPU generator as one process
  /// accumulating over the same microbatches would.
  PipelineStepResult trainStep(const at::Tensor &input, const at::Tensor &labels);
  /// The whole batch once through the stages in eval mode: the output on
  /// the last stage's rank, undefined on the others.
  at::Tensor forward(const at::Tensor &input);

  const PipelinePlace &place() const { return where; }
  Model &model() { return stages; }
  const std::vector<Action> &actions() const { return schedule; }
  /// Whether this rank runs the last stage.
  bool holdsLastStage() const;
  /// The theoretical bubble with unit costs (ScheduleSimulation.h): this
  /// rank's, over the same window it measures, and the whole pipeline's.
  double theoreticalBubble() const { return rankBubble; }
  double pipelineBubble() const { return wholeBubble; }
  /// A loss of the last stage's output [T, b, ...] and its microbatch's labels in place of
  /// the built-in one on the firing rate (the Python API's criterion); backward runs on its
  /// value / M. Empty: the built-in loss. Its steps count no correct predictions.
  using LossFunction =
      std::function<at::Tensor(const at::Tensor &output, const at::Tensor &labels)>;
  void setLossFunction(LossFunction function) { customLoss = std::move(function); }
  /// The logical stages that recompute their activations from the next step on (their
  /// forward keeps only its inputs); throws Error for a stage outside the pipeline or one
  /// named twice.
  void setRecomputedStages(const std::vector<int64_t> &stages);
  /// On: a recomputed stage keeps a received input whose values are all 0 or 1 (spikes) as
  /// one byte per value until its recomputation, a quarter of its float32 size.
  void setCompressedInputs(bool enabled) { compressInputs = enabled; }
  bool compressedInputs() const { return compressInputs; }
  /// Records spans into `trace` from now on (null: none).
  void setTrace(PipelineTrace *value) { trace = value; }

private:
  struct MicrobatchRun;
  struct Step;

  void postReceives(Step &step, size_t index);
  void runForward(Step &step, const Action &action);
  void runBackward(Step &step, const Action &action);
  void runWeightGrad(Step &step, const Action &action);
  std::map<int64_t, at::Tensor> awaitInputs(Step &step, const Action &action);
  void runStagePass(Step &step, const Action &action, MicrobatchRun &run,
                    StagePass pass);
  /// The last stage's loss of `microbatch`; counted into `metrics` unless null.
  at::Tensor lossOf(const Step &step, const at::Tensor &output, int64_t microbatch,
                    PipelineStepResult *metrics);
  void span(PipelineTrace::Kind kind, int64_t stage, int64_t microbatch, int64_t detail,
            PipelineTrace::Clock::time_point start);

  Model &stages;
  PipelinePlace where;
  LossKind loss;
  LossFunction customLoss;
  bool compressInputs = false;
  std::vector<Action> schedule;
  std::unique_ptr<StageTransport> transport;
  std::unique_ptr<DropoutReplay> dropout;
  double rankBubble = 0.0, wholeBubble = 0.0;
  PipelineTrace *trace = nullptr;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_PIPELINE_PIPELINEENGINE_H
