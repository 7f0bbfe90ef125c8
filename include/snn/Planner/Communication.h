//===- Communication.h - What a mode communicates per step --------*- C++ -*-===//
//
// Collectives by kind, group size and tensor size; the bytes a rank sends in them (rings)
// and their time on the Hardware (Calibration.h). The tensor-parallel pairs' collectives
// are in TensorParallel.h.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_PLANNER_COMMUNICATION_H
#define SNN_PLANNER_COMMUNICATION_H

#include "snn/Planner/Calibration.h"
#include "snn/Planner/CostModel.h"
#include "snn/Planner/ModelInfo.h"

#include <cstdint>
#include <vector>

namespace snn::planner {

/// Bytes one rank sends in a collective of a `bytes`-sized tensor over `ranks`, as Gloo runs
/// it (schema/CollectiveAlgorithms.h): an all-reduce by recursive doubling sends the whole
/// tensor log2 r times, one around a ring 2 (r-1)/r of it; gathers and scatters go around a ring.
int64_t allReduceBytes(int64_t bytes, int64_t ranks);
int64_t allGatherBytes(int64_t bytes, int64_t ranks);     ///< (r-1)/r * bytes (full size)
int64_t reduceScatterBytes(int64_t bytes, int64_t ranks); ///< (r-1)/r * bytes (full size)

/// `count` collectives of one kind, each on a tensor of `tensorBytes` over `ranks`.
struct CollectiveCall {
  CollectiveKind kind = CollectiveKind::AllReduce;
  int64_t ranks = 1;
  int64_t tensorBytes = 0;
  int64_t count = 1;
};

/// What a mode communicates per training step and rank.
struct Communication {
  int64_t bytes = 0;
  int64_t collectives = 0;
  int64_t latencySteps = 0; ///< collective steps + point-to-point messages (each pays latency)
  std::vector<CollectiveCall> calls;

  Communication &operator+=(const Communication &other) {
    bytes += other.bytes;
    collectives += other.collectives;
    latencySteps += other.latencySteps;
    calls.insert(calls.end(), other.calls.begin(), other.calls.end());
    return *this;
  }
  /// Bytes over the link plus latency per step; with a calibration, the measured
  /// time of each call instead. `jobRanks`: the ranks of the whole job, when its groups
  /// run their collectives at the same time (Calibration::concurrentCollectiveSeconds).
  double seconds(const Hardware &hw, int64_t jobRanks = 0) const;
  /// The CPU seconds the calls take from each of their ranks: their time x
  /// Calibration::cpuShare of the job's size where measured, else a call's time over its
  /// ranks twice (both ends of a two-rank call busy for its whole time).
  double rankCpuSeconds(const Hardware &hw, int64_t jobRanks) const;
};

Communication allReduce(int64_t bytes, int64_t ranks);
Communication allGather(int64_t bytes, int64_t ranks);
Communication reduceScatter(int64_t bytes, int64_t ranks);

/// Data parallel (also ZeRO-1: its reduce-scatter of gradients plus all-gather of
/// updated parameters moves what one all-reduce moves): all-reduce of the gradients, one
/// call per gradient bucket of schema::kGradientBucketBytes.
Communication dataParallelCommunication(const ModelCost &cost, int64_t dp);
/// Data-parallel training's synchronised BatchNorm: per BatchNorm op, one all-reduce of its
/// channels' statistics in forward and one of their gradient sums in backward, over the dp
/// group. `channelShare[i]` is the rank's share of op i's channels (tensor parallelism;
/// 1 where absent).
Communication syncBatchNormCommunication(const ModelInfo &model, int64_t dp,
                                         const std::vector<double> &channelShare);
/// The step's loss and correct count, all-reduced over the dp group once per step.
Communication stepMetricsCommunication(int64_t dp);
/// What one pipeline rank synchronises after its step's last microbatch
/// (schema/TrainingCommunication.h): the step metrics broadcast over the pp group and, with
/// dp replicas, all-reduced over dp; its stages' gradients all-reduced over dp in one flat
/// tensor; its BatchNorms' running statistics (`batchNormChannels` in all) all-gathered and
/// its buffers (`bufferBytes`) broadcast over dp. A broadcast is priced as the all-gather of
/// the same bytes: both take r - 1 ring steps of a latency-bound tensor.
Communication pipelineStepCommunication(int64_t pp, int64_t dp, int64_t gradientBytes,
                                        int64_t batchNormChannels, int64_t bufferBytes);
/// FSDP: all-gather of every layer's parameters in forward and again in backward, and a
/// reduce-scatter of its gradients; one collective per parameter-holding op each.
Communication fsdpCommunication(const ModelCost &cost, int64_t dp);

} // namespace snn::planner

#endif // SNN_PLANNER_COMMUNICATION_H
