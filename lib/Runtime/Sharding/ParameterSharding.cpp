//===- ParameterSharding.cpp - Which sharding an artifact asks for --------===//

#include "snn/Runtime/Sharding/ParameterSharding.h"
#include "snn/Runtime/Execution/Manifest.h"

namespace snn::runtime {

ShardingMode shardingModeOf(const Manifest &manifest) {
  if (manifest.planMode == "fsdp")
    return ShardingMode::Fsdp;
  if (manifest.planMode == "dp" && manifest.optimizerStrategy == "zero")
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
