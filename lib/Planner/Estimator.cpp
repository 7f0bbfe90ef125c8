//===- Estimator.cpp - Per-rank time and memory of a mode -----------------===//
//
// Deliberately simple, and documented in docs/planner.md: compute and communication do
// not overlap (conservative for every mode alike), collectives as Gloo runs them, a pipeline step
// is (microbatches x virtual stages + stages - 1) ticks of its slowest chunk, and
// recomputation (memopt 1) checkpoints about sqrt(units) segments and re-runs one forward.
//
// Here: what every mode's estimate uses (per-op sums, activation memory, state, subgroup
// collectives) and estimate(), which adds the CPUs' sharing (CpuSharing.cpp). The modes
// themselves: FlatEstimate.cpp (dp, zero, fsdp, tp, fsdp_tp), PipelineEstimate.cpp (pp).
//
//===----------------------------------------------------------------------===//
#include "Estimator.h"
#include "CpuSharing.h"
#include "snn/Schema/CollectiveAlgorithms.h"

#include <algorithm>
#include <cmath>

namespace snn::planner {

int64_t groupCalls(const Communication &comm) {
  int64_t calls = 0;
  for (const CollectiveCall &call : comm.calls)
    calls += call.ranks > 1 ? call.count : 0;
  return calls;
}

Estimator::Estimator(const ModelInfo &model, const Hardware &hardware, int64_t batch,
                     int64_t minUnits)
    : model_(model), hw_(hardware), batch_(std::max<int64_t>(batch, 1)) {
  for (size_t i = 0; i < model.ops.size(); ++i)
    perSample_.push_back(opCost(model, int(i), 1));
  units_ = pipelineUnits(model, minUnits);
  for (size_t i = 0; i < model.ops.size(); ++i)
    blockStart_.push_back(spikingBlockStart(model, int(i)));
  tp_ = planTensorParallel(model);
  if (hardware.calibration)
    step_ = hardware.calibration->modelStepOf(model);
}

double Estimator::stepScale(int64_t batch, bool fused, bool cold) const {
  if (!step_ || batch < 1)
    return 1.0;
  auto cached = stepScales_.find({batch, fused, cold});
  if (cached != stepScales_.end())
    return cached->second;
  double ops = 0;
  for (size_t i = 0; i < model_.ops.size(); ++i)
    ops += opTrainingSeconds(model_, int(i), batch, 1.0, hw_);
  double measured = step_->curveFor(fused, cold).secondsAt(double(batch));
  double scale = ops > 0 && measured > 0 ? measured / ops : 1.0;
  stepScales_.emplace(std::make_tuple(batch, fused, cold), scale);
  return scale;
}

Estimator::Scales Estimator::scalesFor(int64_t tpSize) const {
  size_t n = model_.ops.size();
  if (tpSize <= 1)
    return {std::vector<double>(n, 1.0), std::vector<double>(n, 1.0),
            std::vector<double>(n, 1.0)};
  TPShare share = tensorParallelShare(model_, tp_, tpSize);
  return {share.computeScale, share.activationScale, share.paramScale};
}

double Estimator::computeSeconds(const std::vector<int> &ops, const Scales &s, int64_t batch,
                                 bool fused, bool cold) const {
  double total = 0;
  for (int op : ops)
    total += opTrainingSeconds(model_, op, batch, s.compute[op], hw_);
  return total * stepScale(batch, fused, cold);
}

int64_t Estimator::params(const std::vector<int> &ops, const Scales &s) const {
  double total = 0;
  for (int op : ops)
    total += double(perSample_[op].paramBytes) * s.param[op];
  return int64_t(total);
}

int64_t Estimator::largestLayer(const std::vector<int> &ops, const Scales &s) const {
  int64_t largest = 0;
  for (int op : ops)
    largest = std::max(largest, int64_t(double(perSample_[op].paramBytes) * s.param[op]));
  return largest;
}

int64_t Estimator::buffers(const std::vector<int> &ops) const {
  int64_t total = 0;
  for (int op : ops)
    total += perSample_[op].bufferBytes;
  return total;
}

/// The bytes the runtime keeps for the backward over `units`, and its peak: the backward
/// walks the ops in reverse, freeing each op's kept tensors after its backward, while the
/// op (or fused spiking block) holds the gradients of its output and of its input.
Estimator::ActivationMemory Estimator::activations(const std::vector<int> &units,
                                                   const Scales &s, int64_t batch,
                                                   bool recompute, bool fused) const {
  // Per unit: what it keeps, its peak over its own kept prefix, and its output.
  std::vector<double> unitKept, unitPeak, unitOutput;
  for (int u : units) {
    double kept = 0, peak = 0;
    for (int op : units_[u].ops) {
      const OpCost &c = perSample_[op];
      kept += double(fused ? c.fusedActivationBytes : c.activationBytes) * s.activation[op];
      // Inside a fused block only its last op counts, with the block's input.
      int block = fused ? blockStart_[size_t(op)] : -1;
      if (block >= 0 && size_t(op + 1) < blockStart_.size() &&
          blockStart_[size_t(op + 1)] == block)
        continue;
      double input = double(perSample_[block < 0 ? op : block].inputBytes);
      peak = std::max(peak, kept + (input + double(c.outputBytes)) * s.activation[op]);
    }
    int last = units_[u].ops.back();
    unitKept.push_back(kept);
    unitPeak.push_back(peak);
    unitOutput.push_back(double(perSample_[last].outputBytes) * s.activation[last]);
  }
  // A run of units backward on its own: the peak over its units above what precedes them.
  auto runPeak = [&](size_t first, size_t count, double before) {
    double peak = 0;
    for (size_t i = first; i < first + count; before += unitKept[i], ++i)
      peak = std::max(peak, before + unitPeak[i]);
    return peak;
  };
  double kept = 0;
  for (double bytes : unitKept)
    kept += bytes;
  if (!recompute || units.empty()) {
    int64_t peak = int64_t(runPeak(0, unitKept.size(), 0.0) * double(batch));
    for (size_t i = 0; i < units.size(); ++i) {
      unitKept[i] *= double(batch);
      unitPeak[i] *= double(batch);
    }
    return {int64_t(kept * double(batch)), peak, std::move(unitKept), std::move(unitPeak)};
  }
  // Checkpointing in about sqrt(U) contiguous segments of units (Chen et al.): backward
  // keeps each segment's output and rebuilds one segment's insides at a time. Per-unit
  // segments would save nothing when units are single layers.
  int64_t segments = std::max<int64_t>(1, std::llround(std::sqrt(double(units.size()))));
  double checkpoints = 0, largest = 0, peak = 0;
  size_t next = 0;
  for (int64_t count : balancedStageLayout(unitKept, segments)) {
    double inside = 0;
    for (int64_t i = 0; i < count; ++i)
      inside += unitKept[next + size_t(i)];
    peak = std::max(peak, runPeak(next, size_t(count), checkpoints));
    next += size_t(count);
    checkpoints += unitOutput[next - 1];
    largest = std::max(largest, inside);
  }
  return {int64_t((checkpoints + largest) * double(batch)), int64_t(peak * double(batch))};
}

int64_t allReduceScratchBytes(int64_t ranks, int64_t bytes) {
  return schema::allReduceByRecursiveDoubling(ranks, bytes) ? bytes : 0;
}

int64_t Estimator::batchBytes(int64_t samples) const {
  return elementsAt(model_.inputShape, model_.inputBatchDim, samples) * kBytesPerElement +
         samples * int64_t(sizeof(int64_t)); // the labels
}

int64_t Estimator::stateBytes(int64_t paramBytes, int64_t bufferBytes, int64_t shardParams,
                              int64_t shardOptimizer) const {
  int64_t weightsAndGrads = 2 * paramBytes / shardParams;
  int64_t optimizer =
      int64_t(hw_.optimizerStatesPerParam) * paramBytes / (shardParams * shardOptimizer);
  return weightsAndGrads + optimizer + bufferBytes;
}

/// Collectives of groups smaller than the job (`comm`: a pipeline stage's tp collectives,
/// one microbatch's, or fsdp_tp's): their seconds alone, and what they wait beyond that for
/// their peers while every rank of the job computes, each call after `computePerCall`
/// (Calibration::busyCollectiveSeconds; for a stage, estimate() charges it as often as a
/// ready rank finds the CPUs taken). The job's curve scaled to the
/// group (Calibration::concurrentCollectiveSeconds) had the CSNN's pp=2 x tp=2 calls at 1.4
/// ms where they took 2.2-2.4 (its step 1.2-1.6x the prediction) and the MLP's at 1.4 where
/// they took 0.85. Without the waits measured: that curve, and no wait beyond it (the
/// group's own curve alone had every pp x tp row 1.19-1.58 under its measurement).
std::pair<double, double> Estimator::subgroupCollectives(const Communication &comm,
                                                         double computePerCall,
                                                         int64_t jobRanks) const {
  if (!hw_.calibration || hw_.calibration->waitsBetweenComputes.empty() ||
      groupCalls(comm) == 0)
    return {comm.seconds(hw_, jobRanks), 0.0};
  const Calibration &measured = *hw_.calibration;
  double alone = 0, busy = 0;
  for (const CollectiveCall &call : comm.calls) {
    if (call.ranks < 2)
      continue;
    double bytes = double(call.tensorBytes);
    double own = measured.collectiveSeconds(call.kind, call.ranks, bytes);
    std::optional<double> waited = measured.busyCollectiveSeconds(
        call.kind, call.ranks, jobRanks, bytes, computePerCall);
    alone += double(call.count) * own;
    busy += double(call.count) * waited.value_or(own);
  }
  return {alone, busy - alone};
}

int64_t Estimator::batchNormChannels(const std::vector<int> &ops, const Scales &s) const {
  double channels = 0;
  for (int op : ops) {
    const OpInfo &info = model_.ops[size_t(op)];
    if (info.kind == OpKind::BatchNorm && size_t(info.batchDim + 1) < info.outputShape.size())
      channels += double(info.outputShape[size_t(info.batchDim + 1)]) * s.param[size_t(op)];
  }
  return int64_t(channels);
}

Estimate skeleton(const ModeConfig &config) {
  Estimate e;
  static_cast<ModeConfig &>(e) = config;
  return e;
}

Estimate Estimator::estimate(const ModeConfig &config, int64_t memoryBudget) const {
  Estimate e = skeleton(config);
  if (config.mode == Mode::PP)
    estimatePipeline(config, e);
  else
    estimateFlat(config, e);
  // Ranks that share the machine's CPUs compute more slowly than the curves, measured
  // alone, say.
  if (hw_.calibration) {
    e.computeSeconds *= cpuContention(
        e, hw_.calibration->oversubscription(config.dp * config.tp * config.pp));
    if (e.stageCollectiveLagSeconds > 0) {
      e.peerWaitSeconds = peerDelayChance(e, *hw_.calibration) * e.stageCollectiveLagSeconds;
      e.commSeconds += e.peerWaitSeconds;
    }
    e.computeSeconds += cpuThroughputWait(e, *hw_.calibration);
  }
  e.stepSeconds = e.computeSeconds + e.commSeconds;
  e.memoryBytes = e.stateBytes + e.activationBytes + e.transientBytes;
  e.fitsBudget = memoryBudget <= 0 || e.memoryBytes <= memoryBudget;
  return e;
}

} // namespace snn::planner
