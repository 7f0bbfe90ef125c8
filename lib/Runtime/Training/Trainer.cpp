//===- Trainer.cpp - The training loop ------------------------------------===//

#include "snn/Runtime/Training/Trainer.h"
#include "snn/Runtime/Execution/DataParallel.h"
#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/StepArena.h"
#include "snn/Runtime/Training/Evaluate.h"
#include "snn/Runtime/Pipeline/PipelineEngine.h"
#include "snn/Runtime/Execution/ParameterPartition.h"
#include "snn/Runtime/Execution/RandomState.h"
#include "snn/Runtime/Checkpoint/NonFiniteValues.h"
#include "snn/Runtime/Checkpoint/PartitionedCheckpoint.h"
#include "snn/Runtime/Checkpoint/SaveAgreement.h"
#include "snn/Runtime/Checkpoint/ShardedCheckpoint.h"
#include "snn/Runtime/Checkpoint/TrainCheckpoint.h"
#include "snn/Runtime/Training/CommStatsTable.h"
#include "snn/Schema/TrainingCommunication.h"

#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <cstdint>
#include <cmath>
#include <iostream>
#include <random>

namespace snn::runtime {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Adds a finished step to the summary's times: a step with a save, one
/// begun while a save was written, or another.
void countStepTime(CheckpointTimes &times, const StepMetrics &step, bool saves) {
  double seconds = step.seconds + step.checkpointSeconds;
  if (saves) {
    ++times.saves;
    times.saveSeconds += seconds;
    times.checkpointSeconds += step.checkpointSeconds;
  } else if (step.checkpointWriting) {
    ++times.writingSteps;
    times.writingSeconds += seconds;
  } else {
    ++times.otherSteps;
    times.otherSeconds += seconds;
  }
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
  if (sinks.checkpoints)
    saver = std::make_unique<CheckpointSaver>(
        *sinks.checkpoints, this->config.checkpointPolicy,
        [this](const std::string &message) { warn(message); });
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

const dist::Group *Trainer::runGroup() const {
  if (mesh && mesh->world().valid())
    return &mesh->world();
  return dataParallel ? &dataParallel->group : nullptr;
}

void Trainer::warn(const std::string &message) const {
  if (sinks.progress)
    sinks.progress->warning(message);
  else
    std::cerr << ("warning: " + message + "\n") << std::flush;
}

bool Trainer::acceptLoss(double loss, double ownLoss) {
  if (std::isfinite(loss))
    return true;
  if (config.skipNonFiniteSteps)
    return false;
  std::string message = std::string("loss is ") + (std::isnan(loss) ? "nan" : "inf") +
                        " at step " + std::to_string(position.step) + " (epoch " +
                        std::to_string(position.epoch) + ")";
  // Every rank sees the same loss, so every rank is here: the first rank
  // whose own loss was not finite is found with one more collective.
  if (const dist::Group *group = runGroup()) {
    at::Tensor first = at::empty({1}, at::kLong);
    first.data_ptr<int64_t>()[0] =
        std::isfinite(ownLoss) ? INT64_MAX : group->globalRank(group->rank());
    dist::allReduce(*group, first, dist::ReduceOp::Min);
    int64_t rank = first.data_ptr<int64_t>()[0];
    message += rank == INT64_MAX ? " (the sum over the ranks; each rank's own loss is finite)"
                                 : " on rank " + std::to_string(rank);
  }
  stopRun(message);
}

bool Trainer::gradientsFinite() const {
  bool finite = true;
  for (const ParameterSharding::LocalPiece &piece : sharding->localPieces())
    if (!allFinite(piece.grad)) {
      finite = false;
      break;
    }
  if (const dist::Group *group = runGroup()) {
    at::Tensor bad = at::empty({1}, at::kLong);
    bad.data_ptr<int64_t>()[0] = finite ? 0 : 1;
    dist::allReduce(*group, bad, dist::ReduceOp::Max);
    finite = bad.data_ptr<int64_t>()[0] == 0;
  }
  return finite;
}

std::vector<at::Tensor> Trainer::buffersBeforeStep() const {
  std::vector<at::Tensor> copies;
  if (!config.skipNonFiniteSteps)
    return copies;
  for (const ParameterStore::Entry &entry : model.params().entries())
    if (entry.kind == ParameterKind::Buffer)
      copies.push_back(entry.tensor.detach().clone());
  return copies;
}

bool Trainer::updateOrSkip(bool accepted, double lr,
                           const std::vector<at::Tensor> &buffersBefore) {
  if (accepted && config.skipNonFiniteSteps)
    accepted = gradientsFinite();
  if (accepted)
    sharding->step(lr);
  else
    skipStep(buffersBefore);
  return accepted;
}

void Trainer::skipStep(const std::vector<at::Tensor> &buffersBefore) {
  sharding->dropGradients();
  // BatchNorm's running statistics took the bad batch in the forward.
  at::NoGradGuard noGrad;
  size_t next = 0;
  for (const ParameterStore::Entry &entry : model.params().entries())
    if (entry.kind == ParameterKind::Buffer && next < buffersBefore.size())
      entry.tensor.copy_(buffersBefore[next++]);
}

StepMetrics Trainer::trainStep(const Batch &batch) {
  if (pipeline)
    return pipelineStep(batch);
  double lr = config.schedule.at(position.step);
  Clock::time_point start = Clock::now();
  if (mesh)
    mesh->stats().reset();
  model.params().zeroGrad();
  std::vector<at::Tensor> buffersBefore = buffersBeforeStep();
  stepFiring.clear();
  model.setFiringCounts(config.firingRates ? &stepFiring : nullptr);
  at::Tensor output = model.forward(batch.input, true);
  model.setFiringCounts(nullptr);
  at::Tensor rate = firingRate(output, model.manifest().output.timeMajor);
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
  bool accepted = true;
  if (!dataParallel) {
    accepted = acceptLoss(lossValue, lossValue);
    if (accepted) {
      loss.backward();
      sharding->finishBackward();
    }
  } else {
    // The global batch's loss (the mean of the ranks' equal-sized shard
    // means) and correct count, reduced while backward runs; the gradients
    // are averaged over the ranks by the reducer's buckets.
    // The layers' firing counts ride along: the ranks run one program.
    int64_t firing = 2 * int64_t(stepFiring.layers().size());
    at::Tensor totals = at::empty({schema::kStepMetricsElements + firing}, at::kDouble);
    totals.data_ptr<double>()[0] = double(lossValue);
    totals.data_ptr<double>()[1] = double(correct);
    stepFiring.pack(totals.data_ptr<double>() + schema::kStepMetricsElements);
    dist::PendingCollective pending =
        dist::allReduceAsync(dataParallel->group, totals, dist::ReduceOp::Sum);
    loss.backward();
    sharding->finishBackward();
    pending.wait();
    int ranks = dataParallel->size();
    float ownLoss = lossValue;
    lossValue = float(totals.data_ptr<double>()[0] / double(ranks));
    correct = int64_t(totals.data_ptr<double>()[1] + 0.5);
    stepFiring.unpack(totals.data_ptr<double>() + schema::kStepMetricsElements);
    samples *= ranks;
    // Every rank sees the same global loss, so all decide alike.
    accepted = acceptLoss(lossValue, ownLoss);
  }
  std::vector<std::pair<std::string, double>> gradNorms = gradientNorms();
  accepted = updateOrSkip(accepted, lr, buffersBefore);
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
  metrics.skipped = !accepted;
  metrics.gradNorms = std::move(gradNorms);
  finishStepFiring(metrics);
  return metrics;
}

/// The module a parameter belongs to: "conv_fc.0" of "conv_fc.0.weight".
static std::string moduleOf(const std::string &parameter) {
  return parameter.substr(0, parameter.rfind('.'));
}

/// The modules with trainable parameters, in model order, each once: the store's (every rank
/// holds every parameter, whole or in part) or, for a pipeline, whose ranks hold their own
/// stages' only, the manifest's (every stage's, the same list on every rank).
static std::vector<std::string> gradientModules(const Model &model, bool pipeline) {
  std::vector<std::string> names;
  if (pipeline) {
    for (const ParameterSpec &parameter : model.manifest().parameters)
      if (parameter.kind == ParameterKind::Parameter && !parameter.frozen)
        names.push_back(parameter.name);
  } else {
    names = model.params().parameterNames();
  }
  std::vector<std::string> modules;
  for (const std::string &name : names)
    if (std::find(modules.begin(), modules.end(), moduleOf(name)) == modules.end())
      modules.push_back(moduleOf(name));
  return modules;
}

double Trainer::gradientCopies(const std::string &name, bool fsdp) const {
  int64_t holders = mesh->world().valid() ? mesh->world().size() : 1;
  if (fsdp) // each dp rank holds its own chunk
    holders /= dataParallel->size();
  if (pipeline && pipeline->place().group) // one stage's ranks hold it
    holders /= pipeline->place().group->size();
  if (const ParameterSpec *split = partition ? partition->splitOf(name) : nullptr)
    holders /= mesh->axisSize(split->meshAxis); // each member holds its own part
  return double(std::max<int64_t>(holders, 1));
}

std::vector<std::pair<std::string, double>> Trainer::gradientNorms() const {
  // Sums of squares per module, the same list on every rank: an fsdp rank's pieces may hold
  // none of a module (a PLIF's one `w` lies in one rank's chunk), a tp rank holds its part
  // of a split parameter, a pipeline rank its stages' modules; the ranks' sums add up in
  // one all-reduce of that list, a piece that several ranks hold alike (a parameter
  // replicated over tp or dp) weighted by 1 / its copies so it counts once.
  const bool spread = partition || pipeline;
  const bool fsdp = sharding->mode() == ShardingMode::Fsdp && dataParallel;
  std::vector<std::string> groups = gradientModules(model, pipeline != nullptr);
  std::map<std::string, size_t> indexOf;
  for (size_t i = 0; i < groups.size(); ++i)
    indexOf.emplace(groups[i], i);
  std::vector<double> squares(groups.size(), 0.0);
  for (const ParameterSharding::LocalPiece &piece : sharding->localPieces())
    if (piece.grad.defined() && piece.grad.numel() > 0) {
      double norm = piece.grad.norm().item<double>();
      double copies = spread ? gradientCopies(piece.name, fsdp) : 1.0;
      squares[indexOf.at(moduleOf(piece.name))] += norm * norm / copies;
    }
  const dist::Group *over = spread ? &mesh->world() : fsdp ? &dataParallel->group : nullptr;
  if (over && over->valid() && over->size() > 1 && !squares.empty()) {
    at::Tensor sums = at::from_blob(squares.data(), {int64_t(squares.size())}, at::kDouble);
    dist::allReduce(*over, sums, dist::ReduceOp::Sum);
  }
  std::vector<std::pair<std::string, double>> norms;
  for (size_t i = 0; i < groups.size(); ++i)
    norms.emplace_back(groups[i], std::sqrt(squares[i]));
  return norms;
}

void Trainer::finishStepFiring(StepMetrics &metrics) {
  if (stepFiring.empty())
    return;
  if (mesh && mesh->world().valid() && mesh->world().size() > 1) {
    // Every rank of a partitioned run runs the same neuron layers, each on
    // its slice (tp) or shard (dp): the sums are the whole layer's.
    at::Tensor counts = at::empty({2 * int64_t(stepFiring.layers().size())}, at::kDouble);
    stepFiring.pack(counts.data_ptr<double>());
    dist::allReduce(mesh->world(), counts, dist::ReduceOp::Sum);
    stepFiring.unpack(counts.data_ptr<double>());
  }
  metrics.firingRates = stepFiring.rates();
  epochFiring.merge(stepFiring);
}

void Trainer::closeEpochFiring(EpochMetrics &metrics, bool complete) {
  metrics.firingRates = epochFiring.rates();
  const dist::Group *group = runGroup();
  bool first = !group || group->rank() == 0;
  if (complete && first)
    for (const LayerFiring &layer : epochFiring.layers())
      if (layer.spikes == 0 || layer.spikes == layer.elements)
        warn("neuron layer '" + layer.layer + "' " +
             (layer.spikes == 0 ? "fired no spike" : "fired at every neuron and step") +
             " in epoch " + std::to_string(metrics.epoch) + " (firing rate " +
             (layer.spikes == 0 ? "0" : "1") + ")");
  if (complete)
    epochFiring.clear();
}

EpochMetrics Trainer::closeEpoch(bool complete) {
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
  closeEpochFiring(metrics, complete);
  // A run that ends inside an epoch keeps its position there, so a resumed,
  // longer run continues the epoch exactly where an uninterrupted run would.
  if (complete)
    position = {position.step, position.epoch + 1, 0, 0.0, 0.0, 0.0, 0};
  return metrics;
}

void Trainer::reportEpoch(const EpochMetrics &metrics, TrainSummary &summary) {
  if (sinks.log)
    sinks.log->epoch(metrics);
  if (sinks.rankLog)
    sinks.rankLog->epoch(metrics);
  if (sinks.progress)
    sinks.progress->epoch(metrics);
  summary.hasEpoch = true;
  summary.lastEpoch = metrics;
}

uint64_t Trainer::drawRunId() const {
  // Not ATen's generator: drawing from it would change the run's trajectory.
  std::random_device device;
  uint64_t drawn = 0;
  while (drawn == 0)
    drawn = uint64_t(device()) << 32 ^ uint64_t(device()) ^
            uint64_t(Clock::now().time_since_epoch().count());
  // Rank 0's draw, so that every rank's shard names the same run.
  const dist::Group *group = runGroup();
  if (!group)
    return drawn;
  at::Tensor id = at::empty({1}, at::kLong);
  id.data_ptr<int64_t>()[0] = int64_t(drawn);
  dist::broadcast(*group, id, 0);
  return uint64_t(id.data_ptr<int64_t>()[0]);
}

[[noreturn]] void Trainer::stopRun(const std::string &message) {
  // The previous save is good: publish it before the run ends. Every rank
  // stops here alike, so a shard's agreement finds them all.
  if (saver) {
    try {
      saver->complete();
    } catch (const Error &e) {
      warn(e.what());
    }
  }
  throw Error(message);
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
    saver->saveWhole(std::move(state));
}

void Trainer::saveShardedCheckpoint() {
  CheckpointState state = capture();
  const dist::Group &group = dataParallel->group;
  // Each rank looks at its own pieces; all stop if any found one.
  agreeAcrossRanks(group, nonFiniteRefusal(state));
  saver->saveShard(std::move(state), group);
}

void Trainer::saveCheckpoint() {
  if (!saver || savedStep == position.step)
    return;
  // The previous save is published (or has failed) before this one begins.
  saver->complete();
  if (pipeline) {
    savePipelineCheckpoint();
  } else if (partition) {
    saveWholeCheckpoint();
  } else if (sharding->mode() != ShardingMode::Replicated) {
    saveShardedCheckpoint();
  } else if (!dataParallel || dataParallel->rank() == 0) {
    saver->saveWhole(capture());
  }
  savedStep = position.step;
}

double Trainer::checkpointAfterStep() {
  Clock::time_point start = Clock::now();
  if (config.checkpointEvery > 0 && position.step % config.checkpointEvery == 0)
    saveCheckpoint();
  else
    saver->poll();
  return secondsSince(start);
}

void Trainer::report(const StepMetrics &metrics, int64_t batch) {
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
    sinks.progress->step(metrics, batch);
}

void Trainer::runStep(TrainSummary &summary) {
  Clock::time_point start = Clock::now();
  bool writing = saver && saver->writing();
  const int64_t batchIndex = position.batch;
  // The batch is the step's: its tensors too are laid out in the step arena.
  StepArena::beginStep();
  int64_t batchSize = 0;
  StepMetrics metrics;
  {
    Batch batch = train.batch(batchIndex);
    batchSize = batch.size;
    metrics = trainStep(batch);
  }
  StepArena::endStep();
  summary.seconds += metrics.seconds;
  summary.samples += batchSize * (dataParallel ? dataParallel->size() : 1) *
                     (pipelineDp ? pipelineDp->size() : 1);
  summary.lastStep = metrics;
  ++summary.stepsDone;
  // A skipped step's loss is not a number to average.
  if (metrics.skipped) {
    ++summary.skippedSteps;
  } else {
    position.lossSum += metrics.loss;
    position.accuracySum += metrics.accuracy;
    ++position.steps;
  }
  position.seconds += secondsSince(start);
  ++position.step;
  ++position.batch;
  std::optional<EpochMetrics> epoch;
  if (position.batch == train.batchesPerEpoch()) {
    epoch = closeEpoch(true);
    train.startEpoch(position.epoch);
  } else if (position.step == config.totalSteps) {
    epoch = closeEpoch(false);
  }
  bool saves = false;
  if (saver) {
    saves = config.checkpointEvery > 0 && position.step % config.checkpointEvery == 0;
    metrics.checkpointing = true;
    metrics.checkpointSeconds = checkpointAfterStep();
    metrics.checkpointWriting = writing;
  }
  report(metrics, batchIndex);
  if (epoch)
    reportEpoch(*epoch, summary);
  countStepTime(summary.checkpoints, metrics, saves);
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
         (config.stopAfter == 0 || summary.stepsDone < config.stopAfter))
    runStep(summary);
  if (sinks.progress)
    sinks.progress->finish();
  saveCheckpoint();
  if (saver)
    saver->complete();
  summary.step = position.step;
  summary.finished = position.step == config.totalSteps;
  return summary;
}

} // namespace snn::runtime
