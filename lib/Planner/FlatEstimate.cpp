//===- FlatEstimate.cpp - Time and memory of dp, zero, fsdp, tp, fsdp_tp --===//
//
// The flat modes: every rank runs the whole model (or its tp share) on its share of the
// batch in lockstep; their collectives, and the waits of ranks that meet in them.
//
//===----------------------------------------------------------------------===//
#include "Estimator.h"
#include "snn/Schema/TrainingCommunication.h"

#include <algorithm>
#include <numeric>

namespace snn::planner {

/// The calls of `kind` in `comm`.
static Communication callsOfKind(const Communication &comm, CollectiveKind kind) {
  Communication selected;
  for (const CollectiveCall &call : comm.calls)
    if (call.kind == kind)
      selected.calls.push_back(call);
  return selected;
}

double Estimator::replicaSyncSeconds(int64_t jobRanks, int64_t samples,
                                     int64_t *calls) const {
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
  if (calls)
    *calls = groupCalls(replicaStep);
  double measured = nearest->second.secondsAt(double(samples));
  return std::max(0.0, measured - alone - replicaStep.seconds(hw_, ranks));
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

void Estimator::estimateFlat(const ModeConfig &config, Estimate &e) const {
  int64_t local = (batch_ + config.dp - 1) / config.dp; // the busiest data-parallel rank
  Scales s = scalesFor(config.tp);
  std::vector<int> ops(model_.ops.size()), units(units_.size());
  std::iota(ops.begin(), ops.end(), 0);
  std::iota(units.begin(), units.end(), 0);

  // SyncBatchNorm (dp replicas) and fsdp's gathering run blocks node by node; a
  // recomputation runs them fused, as the first forward.
  bool fused = config.dp <= 1 && config.mode != Mode::FSDP;
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
  bool fillsCpus = hw_.ranksFillCpus(ranks);
  bool takesEveryCpu =
      fillsCpus || (hw_.calibration && hw_.calibration->oversubscription(ranks) > 1.0);
  // On a job that takes every CPU (or more), a whole-job tp's calls each wait: as the
  // replicas' calls did (their whole wait, which SyncBatchNorm's calls dominate where the
  // model has BatchNorms, is not tp's), or without a replicated step, as calibrate measured
  // between computes (below).
  bool wholeJobTpOnFullCpus = takesEveryCpu && config.mode == Mode::TP && config.tp == ranks;
  // Every flat mode's ranks meet in their collectives every step, at least once; per rank,
  // its share of a tp group's work is about a replica's of local / tp samples.
  int64_t replicaCalls = 0;
  if (ranks > 1)
    e.replicaSyncSeconds = replicaSyncSeconds(
        ranks, std::max<int64_t>(1, local / std::max<int64_t>(config.tp, 1)), &replicaCalls);
  bool tpPaysReplicasCalls =
      wholeJobTpOnFullCpus && e.replicaSyncSeconds > 0 && replicaCalls > 0;
  if (tpPaysReplicasCalls) // the replicas' wait a call, as often as tp calls
    e.replicaSyncSeconds *= double(groupCalls(tp)) / double(replicaCalls);
  double flatSeconds = comm.seconds(hw_, ranks);
  // On a job that takes every CPU, the collectives between the layers' computes wait for
  // their peer as calibrate measured between computes, each after the step's compute over
  // the calls that divide it: fsdp's reduce-scatters of each layer's gradients (20 random
  // models' fsdp on 2 ranks of 2 CPUs measured 0.9-2.4x their predicted step without it;
  // charging the prefetched all-gathers too put them at 0.4-1.2x), and tp's all-reduces,
  // forward and backward (the held-out MLPs' tp=2 measured 1.5-2.7x without it).
  auto waitsBetweenComputes = [&](const Communication &waiting, int64_t calls) {
    double lag = subgroupCollectives(
                     waiting, e.computeSeconds / double(std::max<int64_t>(1, calls)), ranks)
                     .second;
    e.peerWaitSeconds += lag;
    return lag;
  };
  if (fillsCpus && sharded && config.tp <= 1)
    flatSeconds += waitsBetweenComputes(callsOfKind(comm, CollectiveKind::ReduceScatter),
                                        groupCalls(comm));
  if (wholeJobTpOnFullCpus && !tpPaysReplicasCalls)
    tpSeconds += waitsBetweenComputes(tp, groupCalls(tp));
  e.commSeconds = flatSeconds + tpSeconds + e.replicaSyncSeconds;
  comm += tp;
  // Where calibrate measured the collectives' CPU: every rank's compute and its share of
  // them, which the CPUs must run in a step (cpuThroughputWait).
  if (hw_.calibration && !hw_.calibration->cpu.empty())
    e.busySeconds = double(ranks) * (e.computeSeconds + comm.rankCpuSeconds(hw_, ranks));
  e.commBytes = comm.bytes;
}

} // namespace snn::planner
