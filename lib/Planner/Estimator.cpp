//===- Estimator.cpp - Per-rank time and memory of a mode -----------------===//
//
// Deliberately simple, and documented in docs/planner.md: compute and communication do
// not overlap (conservative for every mode alike), collectives are rings, a pipeline step
// is (microbatches x virtual stages + stages - 1) ticks of its slowest chunk, and
// recomputation (memopt 1) checkpoints about sqrt(units) segments and re-runs one forward.
//
//===----------------------------------------------------------------------===//
#include "Estimator.h"
#include "CpuSharing.h"
#include "snn/Schema/CollectiveAlgorithms.h"
#include "snn/Schema/TrainingCommunication.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace snn::planner {

/// The calls of `comm` between two ranks or more (the others move nothing).
static int64_t groupCalls(const Communication &comm) {
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

double Estimator::stepScale(int64_t batch, bool fused) const {
  if (!step_ || batch < 1)
    return 1.0;
  auto cached = stepScales_.find({batch, fused});
  if (cached != stepScales_.end())
    return cached->second;
  double ops = 0;
  for (size_t i = 0; i < model_.ops.size(); ++i)
    ops += opTrainingSeconds(model_, int(i), batch, 1.0, hw_);
  double measured = step_->curveFor(fused).secondsAt(double(batch));
  double scale = ops > 0 && measured > 0 ? measured / ops : 1.0;
  stepScales_.emplace(std::make_pair(batch, fused), scale);
  return scale;
}

double Estimator::replicaSyncSeconds(int64_t jobRanks, int64_t samples) const {
  if (!step_ || step_->replicated.empty() || samples < 1)
    return 0.0;
  auto nearest = nearestByRanks(step_->replicated, jobRanks);
  int64_t ranks = nearest->first;
  double alone = step_->curveFor(/*fused=*/false).secondsAt(double(samples)) *
                 hw_.calibration->oversubscription(ranks);
  // The replicas' own collectives, as the trainer makes them.
  Communication replicaStep = dataParallelCommunication(modelCost(model_, 1), ranks);
  replicaStep += syncBatchNormCommunication(model_, ranks, {});
  replicaStep += stepMetricsCommunication(ranks);
  double measured = nearest->second.secondsAt(double(samples));
  return std::max(0.0, measured - alone - replicaStep.seconds(hw_, ranks));
}

std::vector<double> Estimator::unitCosts() const {
  std::vector<double> costs;
  for (const PipelineUnit &unit : units_) {
    double cost = 0;
    for (int op : unit.ops) {
      const OpCost &c = perSample_[op];
      cost += double(batch_) * (c.forwardFlops + c.backwardFlops + double(c.outputBytes)) +
              double(c.paramBytes);
    }
    costs.push_back(cost);
  }
  return costs;
}

std::vector<double> Estimator::stageCosts(const std::vector<int64_t> &layout) const {
  std::vector<double> units = unitCosts(), stages;
  size_t next = 0;
  for (int64_t count : layout) {
    double sum = 0;
    for (int64_t i = 0; i < count && next < units.size(); ++i)
      sum += units[next++];
    stages.push_back(sum);
  }
  return stages;
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
                                 bool fused) const {
  double total = 0;
  for (int op : ops)
    total += opTrainingSeconds(model_, op, batch, s.compute[op], hw_);
  return total * stepScale(batch, fused);
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

/// FsdpSharding reduces a layer's gradients as soon as backward has them: at each layer with
/// parameters, backward holds the activations of the units before it and its own
/// backward's, the layer gathered, the one before it prefetched, and its gradients with
/// their flat copy for the reduce_scatter (the MLP's fsdp on dp=4 measured 1.89 MiB a rank
/// where one gathered layer beside the activations' peak predicted 0.92).
double Estimator::fsdpBackwardPeak(const std::vector<int> &units, const Scales &s,
                                   const ActivationMemory &held) const {
  double before = 0, previousLayer = 0, peak = 0;
  for (size_t i = 0; i < units.size() && i < held.unitKept.size(); ++i) {
    double layer = double(params(units_[size_t(units[i])].ops, s));
    if (layer > 0) {
      peak = std::max(peak, before + held.unitPeak[i] + 3 * layer + previousLayer);
      previousLayer = layer;
    }
    before += held.unitKept[i];
  }
  return peak;
}

/// What an all-reduce of `bytes` allocates beside its tensor: recursive doubling receives
/// into a tensor of its size; Gloo's ring keeps buffers of its own, outside the tensors the
/// runtime counts.
static int64_t allReduceScratchBytes(int64_t ranks, int64_t bytes) {
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

void Estimator::estimateFlat(const ModeConfig &config, Estimate &e) const {
  int64_t local = (batch_ + config.dp - 1) / config.dp; // the busiest data-parallel rank
  Scales s = scalesFor(config.tp);
  std::vector<int> ops(model_.ops.size()), units(units_.size());
  std::iota(ops.begin(), ops.end(), 0);
  std::iota(units.begin(), units.end(), 0);

  // SyncBatchNorm (dp replicas), fsdp's gathering and recomputation run blocks node by node.
  bool fused = config.dp <= 1 && config.mode != Mode::FSDP && config.memoptLevel == 0;
  double compute = computeSeconds(ops, s, local, fused);
  if (config.memoptLevel > 0)
    compute += compute / 3.0; // one more forward of every recomputed unit
  int64_t paramBytes = params(ops, s);
  bool sharded = config.mode == Mode::FSDP || config.mode == Mode::FSDP_TP;
  int64_t zeroShards = config.optimizer == OptimizerStrategy::Zero ? config.dp : 1;
  e.stateBytes = stateBytes(paramBytes, buffers(ops), sharded ? config.dp : 1, zeroShards);
  ActivationMemory held = activations(units, s, local, config.memoptLevel > 0, fused);
  e.activationBytes = held.peak + batchBytes(local);
  if (sharded && config.memoptLevel == 0) {
    e.transientBytes =
        std::max<int64_t>(0, int64_t(fsdpBackwardPeak(units, s, held)) - held.peak);
  } else if (sharded) {
    e.transientBytes = largestLayer(ops, s); // the layer FSDP gathers before using it
  } else if (config.mode == Mode::DP && config.dp > 1) {
    // The reducer's flat buckets, a copy of the gradients held for the run; after backward,
    // the activations gone, each bucket's all-reduce allocates its scratch (the MLP on dp=4:
    // 2.31 MiB a rank measured, 1.96 predicted without them).
    int64_t bucket = std::min<int64_t>(paramBytes, int64_t(schema::kGradientBucketBytes));
    e.stateBytes += paramBytes;
    e.transientBytes =
        std::max<int64_t>(0, allReduceScratchBytes(config.dp, bucket) - held.peak);
  }

  e.computeSeconds = compute;
  flatCommunication(config, local, paramBytes, s, e);
}

void Estimator::flatCommunication(const ModeConfig &config, int64_t local, int64_t paramBytes,
                                  const Scales &s, Estimate &e) const {
  bool sharded = config.mode == Mode::FSDP || config.mode == Mode::FSDP_TP;
  ModelCost shardable;
  shardable.paramBytes = paramBytes;
  shardable.paramOps = modelCost(model_, 1).paramOps;
  Communication comm, tp;
  if (config.mode == Mode::DP)
    comm += dataParallelCommunication(shardable, config.dp);
  if (sharded)
    comm += fsdpCommunication(shardable, config.dp);
  if (config.mode == Mode::TP || config.mode == Mode::FSDP_TP)
    tp = tensorParallelCommunication(model_, tp_, config.tp, local);
  // What the runtime's data-parallel training adds every step: the global batch's
  // BatchNorm statistics and the step's loss (schema/TrainingCommunication.h).
  comm += syncBatchNormCommunication(model_, config.dp, s.param);
  comm += stepMetricsCommunication(config.dp);
  // A dp x tp mesh's dp and tp groups run their collectives at the same time.
  int64_t ranks = config.dp * config.tp;
  double tpSeconds = tp.seconds(hw_, ranks);
  if (config.tp > 1 && config.tp < ranks) {
    // fsdp_tp's tp groups wait for a peer that computed beside the other groups' ranks, as
    // calibrate's pairs do, every rank computing; the dp groups' calls between resynchronise
    // them (the MLP's and the CSNN's dp=2 x tp=2: 3.3 ms a tp call measured where the
    // concurrent curves said 1.5).
    int64_t calls = std::max<int64_t>(1, groupCalls(comm) + groupCalls(tp));
    auto [alone, lag] = subgroupCollectives(tp, e.computeSeconds / double(calls), ranks);
    tpSeconds = alone + lag;
    e.peerWaitSeconds = lag;
  }
  // Every flat mode's ranks meet in their collectives every step, at least once; per rank,
  // its share of a tp group's work is about a replica's of local / tp samples.
  if (ranks > 1)
    e.replicaSyncSeconds = replicaSyncSeconds(
        ranks, std::max<int64_t>(1, local / std::max<int64_t>(config.tp, 1)));
  e.commSeconds = comm.seconds(hw_, ranks) + tpSeconds + e.replicaSyncSeconds;
  comm += tp;
  // Where calibrate measured the collectives' CPU: every rank's compute and its share of
  // them, which the CPUs must run in a step (cpuThroughputWait).
  if (hw_.calibration && !hw_.calibration->cpu.empty())
    e.busySeconds = double(ranks) * (e.computeSeconds + comm.rankCpuSeconds(hw_, ranks));
  e.commBytes = comm.bytes;
}

Estimator::Chunks Estimator::chunksOf(const ModeConfig &config) const {
  int64_t chunks = config.pp * config.virtualStages;
  Chunks c{std::vector<std::vector<int>>(chunks), std::vector<std::vector<int>>(chunks)};
  size_t nextUnit = 0;
  for (int64_t k = 0; k < chunks && k < int64_t(config.layout.size()); ++k)
    for (int64_t i = 0; i < config.layout[k] && nextUnit < units_.size(); ++i, ++nextUnit) {
      c.units[k].push_back(int(nextUnit));
      for (int op : units_[nextUnit].ops)
        c.ops[k].push_back(op);
    }
  return c;
}

std::vector<int64_t> Estimator::boundaryBytes(const Chunks &chunk, int64_t micro) const {
  std::vector<int64_t> boundary(chunk.ops.size(), 0);
  int lastOp = -1;
  for (size_t k = 0; k < chunk.ops.size(); ++k) {
    if (!chunk.ops[k].empty())
      lastOp = chunk.ops[k].back();
    boundary[k] = lastOp < 0 ? 0 : perSample_[lastOp].outputBytes * micro;
  }
  return boundary;
}

/// A pipeline step from each rank's ticks of one microbatch through its chunks
/// (`perRank`) and the slowest chunk's tick: the busiest rank runs its ticks for each of
/// the m microbatches, filling and draining add stages - 1 of the slowest tick. With equal
/// chunks that is (m v + stages - 1) ticks; with unequal ones a rank's light chunks are not
/// charged as its heaviest (a tensor-parallel classifier in one of four chunks measured
/// 0.75 of a prediction that did).
static double pipelineSeconds(const std::vector<double> &perRank, double slowest, int64_t m) {
  double busiest = *std::max_element(perRank.begin(), perRank.end());
  return double(m) * busiest + double(perRank.size() - 1) * slowest;
}

namespace {
/// A pipeline's ticks of one kind (compute alone, or with transfers): each rank's chunks'
/// sum over one round, and the slowest chunk.
struct PipelineTicks {
  std::vector<double> perRank;
  double slowest = 0;
  explicit PipelineTicks(int64_t stages) : perRank(size_t(stages), 0.0) {}
  void add(int64_t rank, double seconds) {
    perRank[size_t(rank)] += seconds;
    slowest = std::max(slowest, seconds);
  }
  double seconds(int64_t m) const { return pipelineSeconds(perRank, slowest, m); }
};
} // namespace

/// Whether pipeline chunk `k` recomputes its activations (memopt).
static bool recomputesStage(const ModeConfig &config, int64_t k) {
  return std::find(config.memoptStages.begin(), config.memoptStages.end(), k) !=
         config.memoptStages.end();
}

void Estimator::estimatePipeline(const ModeConfig &config, Estimate &e) const {
  int64_t stages = config.pp, chunks = config.pp * config.virtualStages;
  int64_t m = std::max<int64_t>(config.microbatches, 1);
  int64_t dp = std::max<int64_t>(config.dp, 1);
  int64_t micro = (batch_ + dp * m - 1) / (dp * m); // each replica splits its share
  Scales s = scalesFor(config.tp);
  Chunks chunk = chunksOf(config);
  auto recomputes = [&](int64_t k) { return recomputesStage(config, k); };
  std::vector<int64_t> boundary = boundaryBytes(chunk, micro);
  int64_t jobRanks = dp * stages * std::max<int64_t>(config.tp, 1);
  double busy = 0;
  // Each rank's chunks in one round of ticks (one microbatch through all of them): compute
  // alone, with its transfers, and with its tp collectives' lag at full load too.
  PipelineTicks computeTicks(stages), ticks(stages), laggedTicks(stages);
  RankTotals totals(stages);
  for (int64_t k = 0; k < chunks; ++k) {
    // A recomputed stage's second forward and backward take its blocks apart.
    double compute = recomputes(k) ? computeSeconds(chunk.ops[k], s, micro, false) * 4.0 / 3.0
                                   : computeSeconds(chunk.ops[k], s, micro, true);
    int64_t sent = 0;
    double messagesCpu = 0;
    auto send = [&](int64_t bytes) {
      sent += bytes;
      messagesCpu += hw_.messageCpuSeconds(bytes, jobRanks, dp > 1);
      // Replicas' pipelines exchange at the same ticks: the all-pairs curve. One pipeline's
      // messages measured nearer the two-rank one (the MLP's pp=4: 0.44 ms a message where
      // its 4-rank all-pairs curve said 1.2-1.5 ms).
      return hw_.sendSeconds(bytes, jobRanks, dp > 1);
    };
    double forward = k + 1 < chunks ? send(boundary[k]) : 0.0; // activations forward
    double backward = k > 0 ? send(boundary[k - 1]) : 0.0;    // the input's gradient back
    double collectives = 0, collectivesCpu = 0, lag = 0;
    if (config.tp > 1) { // the stage's own tp collectives, per microbatch (subgroupCollectives)
      Communication tp = tensorParallelCommunication(model_, tp_, config.tp, micro, &chunk.ops[k]);
      collectivesCpu = tp.rankCpuSeconds(hw_, jobRanks);
      sent += tp.bytes;
      std::tie(collectives, lag) =
          subgroupCollectives(tp, compute / double(std::max<int64_t>(groupCalls(tp), 1)), jobRanks);
    }
    // The runtime posts its sends without waiting (isend) and its receives ahead (irecv), so
    // a tick waits for the later of its two messages, not for both in turn (the MLP's
    // pp=4 with 2 virtual stages measured 1.6 ms a tick, about one 4-rank message, where
    // their sum predicted twice its step); the tp collectives block.
    double transfer = std::max(forward, backward) + collectives;
    // Messages and collectives take CPU from their ranks too (loopback copies, the
    // backend's threads): what calibrate measured, not their wall time (on 4 ranks of 2
    // CPUs a 64-256 KiB message took 0.5-1.4 ms of CPU where 2 x its 0.9-1.5 ms had every
    // pp=4 row predicted 1.3-1.6x its measurement; a 4 KiB all-reduce kept its ranks'
    // CPUs busy a third of its time).
    busy += (compute + messagesCpu + collectivesCpu) * double(m);
    int64_t rank = k % stages;
    computeTicks.add(rank, compute);
    ticks.add(rank, compute + transfer);
    laggedTicks.add(rank, compute + transfer + lag);
    int64_t inFlight = config.schedule == Schedule::GPipe ? m : std::min(m, chunks - k);
    totals.state[rank] += params(chunk.ops[k], s);
    if (m > 1) // a later microbatch's weight gradient (pipelineRanks)
      totals.largestLayer[rank] =
          std::max(totals.largestLayer[rank], largestLayer(chunk.ops[k], s));
    // A replica's BatchNorms are its own; a recomputed stage runs its blocks node by node.
    ActivationMemory held =
        activations(chunk.units[k], s, micro, recomputes(k), /*fused=*/!recomputes(k));
    totals.activations[rank] += held.kept * (inFlight - 1) + held.peak;
    // The transport's tensors (StageTransport): each microbatch's output is held, and sent,
    // until its gradient is back; the gradients sent back until the step ends.
    if (k + 1 < chunks)
      totals.activations[rank] += boundary[k] * inFlight;
    if (k > 0)
      totals.activations[rank] += boundary[k - 1] * m;
    if (k < stages) // every rank of a replica loads its batch
      totals.activations[rank] += batchBytes(micro * m);
    totals.comm[rank] += sent * m;
  }
  e.computeSeconds = computeTicks.seconds(m);
  e.commSeconds = std::max(0.0, ticks.seconds(m) - e.computeSeconds);
  e.stageCollectiveLagSeconds = std::max(0.0, laggedTicks.seconds(m) - ticks.seconds(m));
  e.busySeconds = busy * double(dp * std::max<int64_t>(config.tp, 1));
  pipelineRanks(config, chunk, s, std::move(totals), e);
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

/// The busiest pipeline rank bounds the memory every rank must have and the bytes it
/// sends. After the pipeline drains, every rank synchronises the step (metrics, and with dp
/// replicas its stages' gradients, running statistics and buffers), all groups at once.
void Estimator::pipelineRanks(const ModeConfig &config, const Chunks &chunk, const Scales &s,
                              RankTotals ranks, Estimate &e) const {
  int64_t stages = config.pp, chunks = int64_t(chunk.ops.size());
  int64_t world = config.dp * config.pp * std::max<int64_t>(config.tp, 1);
  double slowestSync = 0;
  for (int64_t r = 0; r < stages; ++r) {
    std::vector<int> ops;
    for (int64_t k = r; k < chunks; k += stages)
      ops.insert(ops.end(), chunk.ops[k].begin(), chunk.ops[k].end());
    int64_t state = stateBytes(ranks.state[r], buffers(ops), 1, 1);
    // From the second microbatch on, backward computes a layer's weight gradient beside the
    // one accumulated so far, then adds it (the MLP's pp=4: 1.30 MB measured on the rank of
    // a 257 KiB layer, 1.04 predicted without it). With replicas, the gradients' all-reduce
    // after the drain goes through one flat copy of them while the batch is still loaded
    // (the backward's tensors are gone by then). Neither grows with the batch: transient.
    int64_t transient = ranks.largestLayer[r];
    if (config.dp > 1) // the flat copy, and the all-reduce's scratch of its size
      transient = std::max<int64_t>(
          transient, ranks.state[r] + allReduceScratchBytes(config.dp, ranks.state[r]) +
                         batchBytes((batch_ + config.dp - 1) / config.dp) -
                         ranks.activations[r]);
    if (r == 0 || state + ranks.activations[r] + transient >
                      e.stateBytes + e.activationBytes + e.transientBytes) {
      e.stateBytes = state;
      e.activationBytes = ranks.activations[r];
      e.transientBytes = transient;
    }
    Communication sync = pipelineStepCommunication(
        config.pp, config.dp, ranks.state[r], batchNormChannels(ops, s), buffers(ops));
    ranks.comm[r] += sync.bytes;
    slowestSync = std::max(slowestSync, sync.seconds(hw_, world));
  }
  e.commBytes = *std::max_element(ranks.comm.begin(), ranks.comm.end());
  e.commSeconds += slowestSync;
  e.drainSyncSeconds = slowestSync;
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

std::string Estimate::label() const {
  std::string name = modeName(mode);
  if (optimizer == OptimizerStrategy::Zero)
    name += "+zero";
  return name;
}

std::string Estimate::mesh() const {
  switch (mode) {
  case Mode::None: return "1 rank";
  case Mode::DP:
  case Mode::FSDP: return "dp=" + std::to_string(dp);
  case Mode::TP: return "tp=" + std::to_string(tp);
  case Mode::FSDP_TP: return "dp=" + std::to_string(dp) + " x tp=" + std::to_string(tp);
  case Mode::PP:
    // In the mesh's axis order [dp, pp, tp].
    return (dp > 1 ? "dp=" + std::to_string(dp) + " x " : std::string()) + "pp=" +
           std::to_string(pp) + (tp > 1 ? " x tp=" + std::to_string(tp) : std::string()) +
           (virtualStages > 1 ? " (vpp " + std::to_string(virtualStages) + ")" : "");
  }
  return "";
}

} // namespace snn::planner
