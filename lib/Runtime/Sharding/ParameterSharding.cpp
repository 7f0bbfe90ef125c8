//===- ParameterSharding.cpp - Which sharding an artifact asks for --------===//

#include "snn/Runtime/Sharding/ParameterSharding.h"
#include "snn/Runtime/Execution/Manifest.h"

namespace snn::runtime {

std::vector<ParameterSharding::LocalPiece>
wholeParameterPieces(const ParameterStore &store) {
  std::vector<ParameterSharding::LocalPiece> out;
  for (const ParameterStore::Entry &entry : store.entries())
    if (entry.kind == ParameterKind::Parameter)
      out.push_back({entry.name, entry.tensor, entry.tensor.grad(), 0});
  return out;
}

ShardingMode shardingModeOf(const Manifest &manifest) {
  const schema::PlanSpec &plan = manifest.plan;
  // fsdp_tp: fsdp over the dp axis of each tp rank's (local) parameters.
  if (plan.mode == schema::ParallelMode::FSDP ||
      plan.mode == schema::ParallelMode::FSDP_TP)
    return ShardingMode::Fsdp;
  if ((plan.mode == schema::ParallelMode::DP ||
       plan.mode == schema::ParallelMode::TP) &&
      plan.optimizer == schema::OptimizerStrategy::Zero)
    return ShardingMode::Zero;
  return ShardingMode::Replicated;
}

const char *shardingModeName(ShardingMode mode) {
  switch (mode) {
  case ShardingMode::Replicated:
    return "replicated";
  case ShardingMode::Zero:
    return "zero";
  case ShardingMode::Fsdp:
    return "fsdp";
  }
  return "?";
}

} // namespace snn::runtime
