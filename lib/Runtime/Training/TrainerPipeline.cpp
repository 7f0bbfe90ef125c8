//===- TrainerPipeline.cpp - The training loop of a pipeline artifact -----===//
//
// The parts of Trainer that differ for plan mode pp (Trainer.h,
// enablePipeline): the step runs the engine's schedule over microbatches,
// then the ranks agree on the metrics, the dp replicas on the gradients and
// running statistics, and each rank updates its own stages' parameters.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Checkpoint/PartitionedCheckpoint.h"
#include "snn/Runtime/Checkpoint/PipelineCheckpoint.h"
#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Execution/DataParallel.h"
#include "snn/Runtime/Pipeline/PipelineEngine.h"
#include "snn/Runtime/Pipeline/PipelineSync.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Training/Evaluate.h"
#include "snn/Schema/TrainingCommunication.h"
#include "snn/Runtime/Training/Trainer.h"

#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <chrono>

namespace snn::runtime {

namespace {

using Clock = std::chrono::steady_clock;

/// The classes the loss sees: the manifest's output width when it is
/// fixed (0: unknown, the last stage's loss checks the labels).
int64_t classesOf(const Manifest &manifest) {
  const std::vector<int64_t> &shape = manifest.output.shape;
  return shape.empty() ? 0 : std::max<int64_t>(shape.back(), 0);
}

} // namespace

void Trainer::enablePipeline(PipelineEngine &engine, const MeshContext &meshContext,
                             const DataParallelContext &dp, PipelineTrace *spans) {
  if (model.manifest().plan.optimizer != schema::OptimizerStrategy::None)
    throw Error(std::string("a pipeline (plan mode pp) keeps each stage's parameters and "
                            "optimizer state whole on its ranks; optimizer_strategy '") +
                schema::nameOf(model.manifest().plan.optimizer) +
                "' cannot shard them (ZeRO and fsdp run without pp)");
  pipeline = &engine;
  mesh = &meshContext;
  pipelineDp = dp.group.valid() && dp.size() > 1 ? &dp : nullptr;
  trace = spans;
  engine.setTrace(spans);
}

double Trainer::measuredBubble() const {
  return bubbleSteps > 0 ? bubbleSum / double(bubbleSteps) : 0.0;
}

StepMetrics Trainer::pipelineStep(const Batch &batch) {
  double lr = config.schedule.at(position.step);
  Clock::time_point start = Clock::now();
  mesh->stats().reset(); // the stages' tp collectives (--comm-stats)
  model.params().zeroGrad();
  if (!labelsChecked && classesOf(model.manifest()) > 0) {
    checkLabels(train.dataset(), classesOf(model.manifest()));
    if (eval)
      checkLabels(eval->dataset(), classesOf(model.manifest()));
  }
  labelsChecked = true;
  if (trace)
    trace->setStep(position.step);
  std::vector<at::Tensor> buffersBefore = buffersBeforeStep();
  stepFiring.clear();
  model.setFiringCounts(config.firingRates ? &stepFiring : nullptr);
  ReplicatedPipelineStep step = trainPipelineReplicas(
      *pipeline, model, batch.input, batch.labels, pipelineDp ? &pipelineDp->group : nullptr);
  model.setFiringCounts(nullptr);
  PipelineStepResult &result = step.result;
  int64_t replicas = pipelineDp ? pipelineDp->size() : 1;
  double loss = step.lossSum / double(pipeline->place().layout.microbatches * replicas);
  std::vector<std::pair<std::string, double>> gradNorms = gradientNorms();
  // Every rank sees the same loss, so all decide alike, before the update;
  // a last stage's own loss names the rank it came from.
  bool accepted = updateOrSkip(acceptLoss(float(loss), result.lossSum), lr, buffersBefore);
  stepComm = mesh->stats().counts();
  bubbleSum += result.seconds > 0 ? (result.seconds - result.busySeconds) / result.seconds : 0;
  ++bubbleSteps;

  StepMetrics metrics;
  metrics.epoch = position.epoch;
  metrics.step = position.step;
  metrics.loss = loss;
  int64_t samples = batch.size * replicas;
  metrics.accuracy = double(int64_t(step.correct + 0.5)) / double(samples);
  metrics.lr = lr;
  metrics.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  metrics.samplesPerSecond = double(samples) / metrics.seconds;
  metrics.skipped = !accepted;
  metrics.gradNorms = std::move(gradNorms);
  if (config.firingRates)
    finishPipelineFiring(metrics);
  return metrics;
}

void Trainer::finishPipelineFiring(StepMetrics &metrics) {
  const dist::Group &world = mesh->world();
  if (pipelineLayers.empty())
    pipelineLayers = pipelineFiringLayers(&world, &model, stepFiring);
  // Each rank fills its own stages' layers; the sum over the world adds the dp replicas'
  // microbatches and the tp ranks' slices, and gives every rank every stage's layers.
  sumPipelineFiring(&world, pipelineLayers, stepFiring);
  metrics.firingRates = stepFiring.rates();
  epochFiring.merge(stepFiring);
}

void Trainer::savePipelineCheckpoint() {
  CheckpointState state = capture();
  if (partition) // tensor-parallel stages: each stage's split parameters whole first
    gatherWholeCheckpoint(state, *partition);
  gatherPipelineCheckpoint(state, model.manifest(), pipeline->place().group);
  if (mesh->worldRank() == 0)
    saver->saveWhole(std::move(state));
}

EvalMetrics Trainer::evaluateSplit(BatchLoader &loader) {
  if (pipeline)
    return evaluatePipeline(*pipeline, loader, config.loss);
  return evaluate(model, loader, config.loss);
}

} // namespace snn::runtime
