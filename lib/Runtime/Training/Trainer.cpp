//===- Trainer.cpp - The training loop ------------------------------------===//

#include "snn/Runtime/Training/Trainer.h"
#include "snn/Runtime/Execution/DataParallel.h"
#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Training/Evaluate.h"
#include "snn/Runtime/Execution/RandomState.h"
#include "snn/Runtime/Checkpoint/PartitionedCheckpoint.h"
#include "snn/Runtime/Checkpoint/ShardedCheckpoint.h"
#include "snn/Runtime/Checkpoint/TrainCheckpoint.h"
#include "snn/Runtime/Training/CommStatsTable.h"
#include "snn/Schema/TrainingCommunication.h"

#include <ATen/ops/empty.h>

#include <chrono>
#include <cmath>
#include <random>

namespace snn::runtime {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

} // namespace

Trainer::Trainer(Model &model, BatchLoader &train, BatchLoader *eval,
                 TrainConfig config, TrainSinks sinks)
    : model(model), train(train), eval(eval), config(std::move(config)),
      sinks(sinks), sharding(makeReplicatedSharding(
                        model, this->config.optimizer, nullptr)) {
  if (train.batchesPerEpoch() < 1)
    throw Error(train.dataset().name + ": " +
                std::to_string(train.dataset().size()) +
                " samples give no batch of " +
                std::to_string(train.options().batchSize) +
                " (use a smaller --batch-size or --keep-last)");
}

Trainer::~Trainer() = default;

void Trainer::enableDataParallel(const DataParallelContext &dp,
                                 ShardingMode mode) {
  if (!dp.group.valid() || dp.size() == 1)
    return;
  dataParallel = &dp;
  model.setDataParallel(&dp);
  sharding.reset();
  switch (mode) {
  case ShardingMode::Replicated:
    sharding = makeReplicatedSharding(model, config.optimizer, &dp);
    break;
  case ShardingMode::Zero:
    sharding = makeZeroSharding(model, config.optimizer, dp);
    break;
  case ShardingMode::Fsdp:
    sharding = makeFsdpSharding(model, config.optimizer, dp);
    break;
  }
}

void Trainer::enableTensorParallel(const MeshContext &meshContext,
                                   const ParameterPartition &parameters) {
  mesh = &meshContext;
  partition = &parameters;
}

void Trainer::restore(const CheckpointState &state, const std::string &where) {
  // Everything is checked before anything changes.
  checkSameModel(state, model.params(), where);
  if (state.step > config.totalSteps)
    throw Error("checkpoint '" + where + "' is at step " +
                std::to_string(state.step) + ", beyond this run's " +
                std::to_string(config.totalSteps) +
                " steps (--steps/--epochs)");
  if (state.batch < 0 || state.batch >= train.batchesPerEpoch())
    throw Error("checkpoint '" + where + "' is at batch " +
                std::to_string(state.batch) + " of its epoch; this run has " +
                std::to_string(train.batchesPerEpoch()) + " batches per epoch");
  sharding->restore(state, where);
  setCpuGeneratorState(state.generatorState);
  position = {state.step,
              state.epoch,
              state.batch,
              state.epochLossSum,
              state.epochAccuracySum,
              state.epochSeconds,
              state.epochSteps};
  restored = true;
  savedStep = state.step;
  runId = state.runId;
}

CheckpointState Trainer::capture() const {
  CheckpointState state;
  state.step = position.step;
  state.epoch = position.epoch;
  state.batch = position.batch;
  state.seed = train.options().seed;
  state.runId = runId;
  state.epochLossSum = position.lossSum;
  state.epochAccuracySum = position.accuracySum;
  state.epochSteps = position.steps;
  state.epochSeconds = position.seconds;
  state.settings = config.settings;
  sharding->capture(state);
  state.generatorState = cpuGeneratorState();
  return state;
}

void Trainer::checkLoss(float loss) const {
  if (std::isfinite(loss))
    return;
  throw Error(std::string("loss is ") + (std::isnan(loss) ? "nan" : "inf") +
              " at step " + std::to_string(position.step) + " (epoch " +
              std::to_string(position.epoch) + ")");
}

StepMetrics Trainer::trainStep(const Batch &batch) {
  if (pipeline)
    return pipelineStep(batch);
  double lr = config.schedule.at(position.step);
  Clock::time_point start = Clock::now();
  if (mesh)
    mesh->stats().reset();
  model.params().zeroGrad();
  at::Tensor rate = firingRate(model.forward(batch.input, true),
                               model.manifest().output.timeMajor);
  if (!labelsChecked) {
    checkLabels(train.dataset(), rate.size(1));
    if (eval)
      checkLabels(eval->dataset(), rate.size(1));
    labelsChecked = true;
  }
  at::Tensor loss = computeLoss(rate, batch.labels, config.loss);
  float lossValue = loss.item<float>();
  int64_t correct = countCorrect(rate.detach(), batch.labels);
  int64_t samples = batch.size;
  if (!dataParallel) {
    checkLoss(lossValue);
    loss.backward();
    sharding->finishBackward();
  } else {
    // The global batch's loss (the mean of the ranks' equal-sized shard
    // means) and correct count, reduced while backward runs; the gradients
    // are averaged over the ranks by the reducer's buckets.
    at::Tensor totals = at::empty({schema::kStepMetricsElements}, at::kDouble);
    totals.data_ptr<double>()[0] = double(lossValue);
    totals.data_ptr<double>()[1] = double(correct);
    dist::PendingCollective pending =
        dist::allReduceAsync(dataParallel->group, totals, dist::ReduceOp::Sum);
    loss.backward();
    sharding->finishBackward();
    pending.wait();
    int ranks = dataParallel->size();
    lossValue = float(totals.data_ptr<double>()[0] / double(ranks));
    correct = int64_t(totals.data_ptr<double>()[1] + 0.5);
    samples *= ranks;
    // Every rank sees the same global loss, so all stop together.
    checkLoss(lossValue);
  }
  sharding->step(lr);
  double seconds = secondsSince(start);
  if (mesh)
    stepComm = mesh->stats().counts();

  StepMetrics metrics;
  metrics.epoch = position.epoch;
  metrics.step = position.step;
  metrics.loss = lossValue;
  metrics.accuracy = double(correct) / double(samples);
  metrics.lr = lr;
  metrics.samplesPerSecond = double(samples) / seconds;
  metrics.seconds = seconds;
  return metrics;
}

void Trainer::endEpoch(TrainSummary &summary, bool complete) {
  Clock::time_point start = Clock::now();
  EpochMetrics metrics;
  metrics.epoch = position.epoch;
  metrics.steps = position.steps;
  metrics.loss = position.lossSum / double(position.steps);
  metrics.accuracy = position.accuracySum / double(position.steps);
  if (eval && config.evalEveryEpoch) {
    metrics.eval = evaluateSplit(*eval);
    metrics.hasEval = true;
  }
  metrics.seconds = position.seconds + secondsSince(start);
  if (sinks.log)
    sinks.log->epoch(metrics);
  if (sinks.rankLog)
    sinks.rankLog->epoch(metrics);
  if (sinks.progress)
    sinks.progress->epoch(metrics);
  summary.hasEpoch = true;
  summary.lastEpoch = metrics;
  // A run that ends inside an epoch keeps its position there, so a resumed,
  // longer run continues the epoch exactly where an uninterrupted run would.
  if (complete)
    position = {position.step, position.epoch + 1, 0, 0.0, 0.0, 0.0, 0};
}

uint64_t Trainer::drawRunId() const {
  // Not ATen's generator: drawing from it would change the run's trajectory.
  std::random_device device;
  uint64_t drawn = 0;
  while (drawn == 0)
    drawn = uint64_t(device()) << 32 ^ uint64_t(device()) ^
            uint64_t(Clock::now().time_since_epoch().count());
  // Rank 0's draw, so that every rank's shard names the same run.
  const dist::Group *group = dataParallel ? &dataParallel->group : nullptr;
  if (mesh && mesh->world().valid())
    group = &mesh->world();
  if (!group)
    return drawn;
  at::Tensor id = at::empty({1}, at::kLong);
  id.data_ptr<int64_t>()[0] = int64_t(drawn);
  dist::broadcast(*group, id, 0);
  return uint64_t(id.data_ptr<int64_t>()[0]);
}

void Trainer::saveWholeCheckpoint() {
  CheckpointState state = capture();
  if (sharding->mode() != ShardingMode::Replicated) {
    std::vector<ParameterShape> shapes;
    for (const ParameterStore::Entry &entry : model.params().entries())
      if (entry.kind == ParameterKind::Parameter)
        shapes.emplace_back(entry.name, entry.tensor.sizes().vec());
    mergePiecesOverGroup(state, shapes, dataParallel->group);
  }
  gatherWholeCheckpoint(state, *partition);
  if (mesh->worldRank() == 0)
    sinks.checkpoints->save(state);
}

void Trainer::saveCheckpoint() {
  if (!sinks.checkpoints || savedStep == position.step)
    return;
  if (pipeline)
    savePipelineCheckpoint();
  else if (partition)
    saveWholeCheckpoint();
  else if (sharding->mode() != ShardingMode::Replicated)
    saveShardedCheckpoint(*sinks.checkpoints, capture(), dataParallel->group);
  else if (!dataParallel || dataParallel->rank() == 0)
    sinks.checkpoints->save(capture());
  savedStep = position.step;
}

void Trainer::report(const StepMetrics &metrics) {
  // A pipeline's transfers are not collectives of the program; its tensor-parallel stages'
  // collectives are (each rank's own stage's).
  const std::vector<CommCount> *comm = mesh && (!pipeline || partition) ? &stepComm : nullptr;
  if (sinks.log)
    sinks.log->step(metrics, comm);
  if (sinks.rankLog)
    sinks.rankLog->step(metrics, comm);
  if (sinks.commStats)
    sinks.commStats->step(metrics.step, stepComm);
  if (sinks.progress)
    sinks.progress->step(metrics, position.batch);
}

TrainSummary Trainer::run() {
  TrainSummary summary;
  // docs/training.md: seed once, immediately before the first step; a
  // resumed run continues the saved generator state instead.
  if (!restored)
    seedCpuGenerator(config.seed);
  // A checkpoint written before run ids existed continues under a new one.
  if (runId == 0)
    runId = drawRunId();
  train.startEpoch(position.epoch);
  while (position.step < config.totalSteps &&
         (config.stopAfter == 0 || summary.stepsDone < config.stopAfter)) {
    Clock::time_point start = Clock::now();
    Batch batch = train.batch(position.batch);
    StepMetrics metrics = trainStep(batch);
    report(metrics);
    summary.seconds += metrics.seconds;
    summary.samples += batch.size * (dataParallel ? dataParallel->size() : 1) *
                       (pipelineDp ? pipelineDp->size() : 1);
    summary.lastStep = metrics;
    ++summary.stepsDone;
    position.lossSum += metrics.loss;
    position.accuracySum += metrics.accuracy;
    position.seconds += secondsSince(start);
    ++position.steps;
    ++position.step;
    ++position.batch;
    if (position.batch == train.batchesPerEpoch()) {
      endEpoch(summary, true);
      train.startEpoch(position.epoch);
    } else if (position.step == config.totalSteps) {
      endEpoch(summary, false);
    }
    if (config.checkpointEvery > 0 &&
        position.step % config.checkpointEvery == 0)
      saveCheckpoint();
  }
  if (sinks.progress)
    sinks.progress->finish();
  saveCheckpoint();
  summary.step = position.step;
  summary.finished = position.step == config.totalSteps;
  return summary;
}

} // namespace snn::runtime
