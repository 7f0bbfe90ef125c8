//===- Communication.cpp - Collectives of a mode, their bytes and time ----===//
//
// The ring bytes and counts of each collective (schema/CollectiveAlgorithms.h), the
// collectives each mode makes per step as the runtime makes them
// (schema/TrainingCommunication.h), and their time on the Hardware.
//
//===----------------------------------------------------------------------===//
#include "snn/Planner/Communication.h"
#include "snn/Schema/CollectiveAlgorithms.h"
#include "snn/Schema/TrainingCommunication.h"

#include <algorithm>
#include <optional>

namespace snn::planner {

int64_t allReduceBytes(int64_t bytes, int64_t ranks) {
  return schema::allReduceSentBytes(ranks, bytes);
}
int64_t allGatherBytes(int64_t bytes, int64_t ranks) {
  return ranks <= 1 ? 0 : (ranks - 1) * bytes / ranks;
}
int64_t reduceScatterBytes(int64_t bytes, int64_t ranks) { return allGatherBytes(bytes, ranks); }

Communication allReduce(int64_t bytes, int64_t ranks) {
  if (ranks <= 1)
    return {};
  return {allReduceBytes(bytes, ranks), 1, schema::allReduceSteps(ranks, bytes),
          {{CollectiveKind::AllReduce, ranks, bytes, 1}}};
}
Communication allGather(int64_t bytes, int64_t ranks) {
  if (ranks <= 1)
    return {};
  return {allGatherBytes(bytes, ranks), 1, ranks - 1,
          {{CollectiveKind::AllGather, ranks, bytes, 1}}};
}
Communication reduceScatter(int64_t bytes, int64_t ranks) {
  if (ranks <= 1)
    return {};
  return {reduceScatterBytes(bytes, ranks), 1, ranks - 1,
          {{CollectiveKind::ReduceScatter, ranks, bytes, 1}}};
}

Communication dataParallelCommunication(const ModelCost &cost, int64_t dp) {
  if (cost.paramBytes == 0 || dp <= 1)
    return {};
  // The runtime reduces the gradients in buckets of kGradientBucketBytes, one all-reduce
  // each: on a latency-bound link the count matters more than the bytes.
  int64_t bucket = int64_t(schema::kGradientBucketBytes);
  int64_t buckets = std::max<int64_t>(1, (cost.paramBytes + bucket - 1) / bucket);
  Communication total = allReduce(cost.paramBytes, dp);
  total.collectives = buckets;
  total.latencySteps *= buckets;
  total.calls.front().tensorBytes = cost.paramBytes / buckets;
  total.calls.front().count = buckets;
  return total;
}

Communication syncBatchNormCommunication(const ModelInfo &model, int64_t dp,
                                         const std::vector<double> &channelShare) {
  Communication total;
  if (dp <= 1)
    return total;
  for (size_t i = 0; i < model.ops.size(); ++i) {
    const OpInfo &op = model.ops[i];
    if (op.kind != OpKind::BatchNorm || size_t(op.batchDim + 1) >= op.outputShape.size())
      continue;
    double share = i < channelShare.size() ? channelShare[i] : 1.0;
    int64_t channels = std::max<int64_t>(
        1, int64_t(double(op.outputShape[size_t(op.batchDim + 1)]) * share));
    total += allReduce(schema::syncBatchNormForwardElements(channels) *
                           schema::kSyncBatchNormElementBytes, dp);
    total += allReduce(schema::syncBatchNormBackwardElements(channels) *
                           schema::kSyncBatchNormElementBytes, dp);
  }
  return total;
}

Communication stepMetricsCommunication(int64_t dp) {
  return allReduce(schema::kStepMetricsElements * schema::kStepMetricsElementBytes, dp);
}

Communication pipelineStepCommunication(int64_t pp, int64_t dp, int64_t gradientBytes,
                                        int64_t batchNormChannels, int64_t bufferBytes) {
  constexpr int64_t metrics = schema::kStepMetricsElements * schema::kStepMetricsElementBytes;
  Communication total = allGather(metrics, pp);
  if (dp <= 1)
    return total;
  total += allReduce(metrics, dp);
  if (gradientBytes > 0)
    total += allReduce(gradientBytes, dp);
  if (batchNormChannels > 0)
    total += allGather(batchNormChannels * schema::kRunningStatisticsPerChannel *
                           schema::kRunningStatisticElementBytes * dp,
                       dp);
  if (bufferBytes > 0)
    total += allGather(bufferBytes, dp);
  return total;
}

Communication fsdpCommunication(const ModelCost &cost, int64_t dp) {
  Communication total;
  if (dp <= 1 || cost.paramBytes == 0)
    return total;
  total += allGather(cost.paramBytes, dp);     // forward
  total += allGather(cost.paramBytes, dp);     // backward re-gather
  total += reduceScatter(cost.paramBytes, dp); // gradients
  // One collective of each kind per parameter-holding op, not one for the whole model.
  total.collectives = 3 * cost.paramOps;
  total.latencySteps = 3 * cost.paramOps * (dp - 1);
  int64_t ops = std::max<int64_t>(cost.paramOps, 1);
  for (CollectiveCall &call : total.calls) {
    call.tensorBytes = cost.paramBytes / ops; // the layers' average
    call.count = ops;
  }
  return total;
}

double Communication::seconds(const Hardware &hw, int64_t jobRanks) const {
  if (!hw.calibration)
    return double(bytes) / hw.linkBytesPerSecond + double(latencySteps) * hw.latencySeconds;
  double total = 0;
  for (const CollectiveCall &call : calls)
    total += double(call.count) * hw.calibration->concurrentCollectiveSeconds(
                                      call.kind, call.ranks, jobRanks, double(call.tensorBytes));
  return total;
}

double Communication::rankCpuSeconds(const Hardware &hw, int64_t jobRanks) const {
  if (!hw.calibration) { // the constants' time is the calls' together
    int64_t ranks = 1;
    for (const CollectiveCall &call : calls)
      ranks = std::max(ranks, call.ranks);
    return 2.0 * seconds(hw, jobRanks) / double(ranks);
  }
  double total = 0;
  for (const CollectiveCall &call : calls) {
    double ranks = double(std::max<int64_t>(call.ranks, 1));
    double time = hw.calibration->concurrentCollectiveSeconds(call.kind, call.ranks, jobRanks,
                                                              double(call.tensorBytes));
    std::optional<double> share =
        hw.calibration->cpuShare(call.kind, std::max(jobRanks, call.ranks),
                                 double(call.tensorBytes));
    total += double(call.count) * (share ? *share * time : 2.0 * time / ranks);
  }
  return total;
}

} // namespace snn::planner
