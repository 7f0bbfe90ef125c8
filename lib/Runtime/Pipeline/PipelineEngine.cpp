//===- PipelineEngine.cpp - One rank's stages under a schedule ------------===//

#include "snn/Runtime/Pipeline/PipelineEngine.h"
#include "snn/Runtime/Pipeline/DropoutReplay.h"
#include "snn/Runtime/Autograd/WeightGradQueue.h"
#include "snn/Runtime/Execution/Model.h"
#include "snn/Runtime/Execution/StageBoundary.h"
#include "snn/Runtime/Pipeline/ScheduleSimulation.h"
#include "snn/Runtime/Pipeline/StageTransport.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/ops/zeros_like.h>
#include <torch/csrc/autograd/autograd.h>

namespace snn::runtime {

namespace {

using Clock = PipelineTrace::Clock;
using Kind = PipelineTrace::Kind;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

constexpr int kActivation = 0, kGradient = 1;

} // namespace

struct PipelineEngine::MicrobatchRun {
  std::map<int64_t, at::Tensor> inputs;  // recv'd leaves, by slot
  std::map<int64_t, at::Tensor> outputs; // sent tensors with their graph
  at::Tensor loss;                       // the last stage's
  std::unique_ptr<WeightGradQueue> weightGrads;
};

struct PipelineEngine::Step {
  at::Tensor input, labels;
  int64_t samples = 0; // per microbatch
  std::map<std::pair<int64_t, int64_t>, MicrobatchRun> runs;
  std::map<std::pair<int64_t, int64_t>, std::unique_ptr<WeightGradQueue>> queues;
  std::map<StageTransport::Key, StageTransport::Incoming> posted;
  size_t postedUpTo = 0; // actions whose receives are posted
  PipelineStepResult result;
};

PipelineEngine::PipelineEngine(Model &model, const PipelinePlace &place, LossKind loss)
    : stages(model), where(place), loss(loss) {
  const PipelineLayout &layout = place.layout;
  if (model.stages() != layout.stagesOf(place.coordinate))
    throw Error("pipeline: the model of pp coordinate " + std::to_string(place.coordinate) +
                " does not hold that coordinate's stages");
  ScheduleConfig config{layout.schedule, layout.ranks, layout.virtualStages,
                        layout.microbatches, layout.delayWeightGrad};
  std::vector<std::vector<Action>> all = buildSchedule(config);
  ScheduleSimulation simulation = simulateSchedule(config, all);
  schedule = all[size_t(place.coordinate)];
  rankBubble = simulation.rankBubble(size_t(place.coordinate));
  wholeBubble = simulation.bubbleFraction();
  transport = std::make_unique<StageTransport>(stages, layout, place.group);
  dropout = std::make_unique<DropoutReplay>(stages, place);
}

PipelineEngine::~PipelineEngine() = default;

bool PipelineEngine::holdsLastStage() const {
  return where.layout.coordinateOf(where.layout.stageCount - 1) == where.coordinate;
}

void PipelineEngine::span(Kind kind, int64_t stage, int64_t microbatch, int64_t detail,
                          Clock::time_point start) {
  if (trace)
    trace->record(kind, stage, microbatch, detail, start, Clock::now());
}

/// Posts the receives of the actions up to two after `index`, so that the
/// data travels while this rank computes.
void PipelineEngine::postReceives(Step &step, size_t index) {
  size_t last = std::min(index + 3, schedule.size());
  int64_t stages = where.layout.stageCount;
  for (; step.postedUpTo < last; ++step.postedUpTo) {
    const Action &a = schedule[step.postedUpTo];
    int64_t s = a.stage, m = a.microbatch;
    if (a.kind == ActionKind::Forward && s > 0)
      for (size_t slot = 0; slot < transport->recvCount(s); ++slot)
        step.posted[{kActivation, s, m, int64_t(slot)}] =
            transport->receiveActivation(s, m, int64_t(slot), step.samples);
    if (a.kind == ActionKind::Backward && s < stages - 1)
      for (size_t slot = 0; slot < transport->sendCount(s); ++slot)
        step.posted[{kGradient, s, m, int64_t(slot)}] =
            transport->receiveGradient(s, m, int64_t(slot), step.samples);
  }
}

/// The posted receives of `action` (F: its inputs; B: its outputs'
/// gradients), waited for; the wait is the action's idle time.
std::map<int64_t, at::Tensor> PipelineEngine::awaitInputs(Step &step, const Action &action) {
  bool forward = action.kind == ActionKind::Forward;
  size_t count = forward ? (action.stage > 0 ? transport->recvCount(action.stage) : 0)
                         : (action.stage < where.layout.stageCount - 1
                                ? transport->sendCount(action.stage)
                                : 0);
  Clock::time_point start = Clock::now();
  std::map<int64_t, at::Tensor> tensors;
  for (size_t slot = 0; slot < count; ++slot) {
    auto it = step.posted.find({forward ? kActivation : kGradient, action.stage,
                                action.microbatch, int64_t(slot)});
    if (it == step.posted.end()) // postReceives covers every action: a bug
      throw Error("pipeline: no receive posted for " + describeAction(action) +
                  " slot " + std::to_string(slot));
    tensors[int64_t(slot)] = it->second.wait();
    step.posted.erase(it);
  }
  if (count > 0)
    span(Kind::Wait, action.stage, action.microbatch, forward ? 0 : 1, start);
  return tensors;
}

at::Tensor PipelineEngine::lossOf(const Step &step, const at::Tensor &output,
                                  int64_t microbatch, PipelineStepResult *metrics) {
  at::Tensor labels = step.labels.narrow(0, microbatch * step.samples, step.samples);
  if (customLoss) {
    at::Tensor value = customLoss(output, labels);
    if (!value.defined() || value.numel() != 1)
      throw Error("the pipeline's loss function must return one value, not a tensor of " +
                  std::to_string(value.defined() ? value.numel() : 0) + " elements");
    if (metrics)
      metrics->lossSum += value.item<double>();
    return value.reshape({});
  }
  at::Tensor rate = firingRate(output, stages.manifest().output.timeMajor);
  at::Tensor value = computeLoss(rate, labels, loss);
  if (metrics) {
    metrics->lossSum += double(value.item<float>());
    metrics->correct += countCorrect(rate.detach(), labels);
  }
  return value;
}

/// The stage's forward of `a` over the inputs `run` holds: the first one
/// (`pass` Training, or TrainingWithoutGraph for a recomputed stage, which
/// then keeps only its inputs) or its recomputation before the backward.
void PipelineEngine::runStagePass(Step &step, const Action &a, MicrobatchRun &run,
                                  StagePass pass) {
  StageBoundary boundary;
  boundary.received = run.inputs;
  if (where.layout.splitsBackward() && pass != StagePass::TrainingWithoutGraph)
    run.weightGrads = std::make_unique<WeightGradQueue>();
  // Dropout draws what one process would for this microbatch and stage,
  // on the recomputation as on the first forward.
  dropout->enter(a.stage, a.microbatch);
  at::Tensor x;
  if (a.stage == 0)
    x = step.input.narrow(1, a.microbatch * step.samples, step.samples);
  at::Tensor output = stages.runStage(a.stage, x, boundary, pass, run.weightGrads.get(),
                                      where.layout.splitsBackward());
  if (a.stage == where.layout.stageCount - 1)
    run.loss = lossOf(step, output, a.microbatch,
                      pass == StagePass::Recomputation ? nullptr : &step.result);
  run.outputs = std::move(boundary.sent);
}

void PipelineEngine::setRecomputedStages(const std::vector<int64_t> &stages) {
  checkRecomputedStages("pipeline: ", stages, where.layout.stageCount);
  where.layout.recomputedStages = stages;
}

namespace {

/// A recomputed stage's received inputs that hold only 0s and 1s, as bytes until its
/// recomputation (activations are float32, so a byte tensor is one of these).
void packSpikeInputs(std::map<int64_t, at::Tensor> &inputs) {
  for (auto &[slot, value] : inputs)
    if (value.scalar_type() == at::kFloat &&
        value.eq(0).logical_or(value.eq(1)).all().item<bool>())
      value = value.detach().to(at::kByte);
}

void unpackSpikeInputs(std::map<int64_t, at::Tensor> &inputs) {
  for (auto &[slot, value] : inputs)
    if (value.scalar_type() == at::kByte)
      value = value.to(at::kFloat).requires_grad_(true);
}

} // namespace

void PipelineEngine::runForward(Step &step, const Action &a) {
  MicrobatchRun &run = step.runs[{a.stage, a.microbatch}];
  run.inputs = awaitInputs(step, a);
  Clock::time_point start = Clock::now();
  for (auto &[slot, tensor] : run.inputs)
    tensor.requires_grad_(true);
  bool recompute = where.layout.recomputes(a.stage);
  runStagePass(step, a, run,
               recompute ? StagePass::TrainingWithoutGraph : StagePass::Training);
  step.result.busySeconds += secondsSince(start);
  span(Kind::Forward, a.stage, a.microbatch, 0, start);
  for (const auto &[slot, value] : run.outputs) {
    Clock::time_point posting = Clock::now();
    transport->sendActivation(a.stage, a.microbatch, slot, step.samples, value);
    span(Kind::SendActivation, a.stage, a.microbatch, a.stage + 1, posting);
  }
  if (recompute) { // the transport holds what it sends; the stage keeps its inputs
    run.outputs.clear();
    run.loss = at::Tensor();
    if (compressInputs)
      packSpikeInputs(run.inputs);
  }
}

void PipelineEngine::runBackward(Step &step, const Action &a) {
  auto found = step.runs.find({a.stage, a.microbatch});
  MicrobatchRun &run = found->second;
  std::map<int64_t, at::Tensor> grads = awaitInputs(step, a);
  if (a.stage + 1 < where.layout.stageCount)
    transport->releaseActivationSends(a.stage, a.microbatch);
  if (where.layout.recomputes(a.stage)) {
    Clock::time_point start = Clock::now();
    unpackSpikeInputs(run.inputs);
    runStagePass(step, a, run, StagePass::Recomputation);
    step.result.busySeconds += secondsSince(start);
    span(Kind::Recompute, a.stage, a.microbatch, 0, start);
  }
  Clock::time_point start = Clock::now();
  if (run.loss.defined()) {
    // As the reference accumulates: each microbatch's loss over M.
    run.loss.div(double(where.layout.microbatches)).backward();
  } else {
    std::vector<at::Tensor> roots, rootGrads;
    for (const auto &[slot, value] : run.outputs)
      if (value.requires_grad()) {
        roots.push_back(value);
        rootGrads.push_back(grads.at(slot));
      }
    if (!roots.empty())
      torch::autograd::backward(roots, rootGrads);
  }
  step.result.busySeconds += secondsSince(start);
  span(Kind::Backward, a.stage, a.microbatch, 0, start);
  for (const auto &[slot, leaf] : run.inputs) {
    Clock::time_point posting = Clock::now();
    at::Tensor grad = leaf.grad().defined() ? leaf.grad() : at::zeros_like(leaf);
    transport->sendGradient(a.stage, a.microbatch, slot, grad);
    span(Kind::SendGradient, a.stage, a.microbatch, a.stage - 1, posting);
  }
  if (run.weightGrads)
    step.queues[{a.stage, a.microbatch}] = std::move(run.weightGrads);
  step.runs.erase(found);
}

void PipelineEngine::runWeightGrad(Step &step, const Action &a) {
  auto found = step.queues.find({a.stage, a.microbatch});
  Clock::time_point start = Clock::now();
  found->second->run();
  step.queues.erase(found);
  step.result.busySeconds += secondsSince(start);
  span(Kind::WeightGrad, a.stage, a.microbatch, 0, start);
}

PipelineStepResult PipelineEngine::trainStep(const at::Tensor &input,
                                             const at::Tensor &labels) {
  int64_t microbatches = where.layout.microbatches;
  if (input.size(1) % microbatches != 0)
    throw Error("pipeline: a batch of " + std::to_string(input.size(1)) +
                " samples does not divide into " + std::to_string(microbatches) +
                " microbatches (plan.pp_microbatches)");
  Step step;
  step.input = input;
  step.labels = labels;
  step.samples = input.size(1) / microbatches;
  step.result.hasMetrics = holdsLastStage();
  Clock::time_point start = Clock::now();
  dropout->planStep(step.samples);
  for (size_t index = 0; index < schedule.size(); ++index) {
    postReceives(step, index);
    const Action &action = schedule[index];
    if (action.kind == ActionKind::Forward)
      runForward(step, action);
    else if (action.kind == ActionKind::Backward)
      runBackward(step, action);
    else
      runWeightGrad(step, action);
  }
  Clock::time_point sends = Clock::now();
  transport->finishSends();
  span(Kind::Wait, -1, -1, 2, sends);
  dropout->finishStep();
  step.result.seconds = secondsSince(start);
  return step.result;
}

at::Tensor PipelineEngine::forward(const at::Tensor &input) {
  int64_t samples = input.size(1);
  at::Tensor output;
  for (int64_t stage : stages.stages()) {
    StageBoundary boundary;
    for (size_t slot = 0; slot < transport->recvCount(stage); ++slot)
      boundary.received[int64_t(slot)] =
          transport->receiveActivation(stage, 0, int64_t(slot), samples).wait();
    at::Tensor result = stages.runStage(stage, stage == 0 ? input : at::Tensor(), boundary,
                                       StagePass::Eval);
    if (stage == where.layout.stageCount - 1)
      output = result;
    for (const auto &[slot, value] : boundary.sent)
      transport->sendActivation(stage, 0, slot, samples, value);
  }
  transport->finishSends();
  return output;
}

} // namespace snn::runtime
