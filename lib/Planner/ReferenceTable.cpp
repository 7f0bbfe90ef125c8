//===- ReferenceTable.cpp - The reference package's decision table --------===//
//
// The reference package's decision table (docs/reference-api.md), the fallback when the
// IR gives no model information (and on request, to compare). Two deliberate readings, both documented in docs/planner.md:
// the feature flags gate ZeRO and pipelines here as they gate the cost model, and the
// "fsdp2_tp on (W/2, 2)" row needs a TP candidate (without one it falls through to the
// "otherwise" row rather than failing).
//
//===----------------------------------------------------------------------===//
#include "snn/Planner/ReferenceTable.h"

namespace snn::planner {

namespace {

TableDecision memoryRow(int64_t world, bool tpAvailable, bool hasTrainableParams) {
  TableDecision d;
  d.memoptLevel = 1;
  if (world >= 4 && world % 2 == 0 && tpAvailable) {
    d.mode = Mode::FSDP_TP;
    d.dp = world / 2;
    d.tp = 2;
    d.reason = "memory objective on an even world of at least 4 ranks: fsdp_tp on (W/2, 2)";
    return d;
  }
  if (tpAvailable) {
    d.mode = Mode::TP;
    d.tp = world;
    d.reason = "memory objective: tensor parallelism is available";
  } else if (hasTrainableParams) {
    d.mode = Mode::FSDP;
    d.dp = world;
    d.reason = "memory objective: no tensor-parallel candidate, so fsdp";
  } else {
    d.mode = Mode::DP;
    d.dp = world;
    d.reason = "memory objective: no tensor-parallel candidate and no parameters to shard, "
               "so dp";
  }
  return d;
}

} // namespace

TableDecision referenceTableDecision(Objective objective, int64_t world, int64_t batch,
                                     bool tpAvailable, bool hasTrainableParams,
                                     const Features &features) {
  TableDecision d;
  if (world <= 1) {
    d.memoptLevel = objective == Objective::Speed ? 0 : 1;
    d.reason = "world size 1: a single process";
    return d;
  }
  if (objective == Objective::Speed) {
    d.mode = Mode::DP;
    d.dp = world;
    d.optimizer = features.allowZero ? OptimizerStrategy::Zero : OptimizerStrategy::None;
    d.reason = features.allowZero ? "speed objective: dp with ZeRO-1 optimizer sharding"
                                  : "speed objective: dp (ZeRO not allowed)";
    return d;
  }
  if (objective == Objective::Capacity && features.allowPipeline) {
    int64_t virtualStages = batch >= 2 * world ? 2 : batch >= world ? 1 : 0;
    if (virtualStages > 0) {
      d.mode = Mode::PP;
      d.pp = world;
      d.virtualStages = virtualStages;
      d.memoptLevel = 1;
      d.reason = "capacity objective: pp with " + std::to_string(virtualStages) +
                 " virtual stage(s) per rank (batch " + std::to_string(batch) +
                 (virtualStages == 2 ? " >= 2W" : " >= W") + ")";
      return d;
    }
    TableDecision m = memoryRow(world, tpAvailable, hasTrainableParams);
    m.reason = "capacity objective: batch " + std::to_string(batch) +
               " < W leaves no microbatch per stage, so as memory; " + m.reason;
    return m;
  }
  TableDecision m = memoryRow(world, tpAvailable, hasTrainableParams);
  if (objective == Objective::Capacity)
    m.reason = "capacity objective without pipelines allowed, so as memory; " + m.reason;
  return m;
}

} // namespace snn::planner
