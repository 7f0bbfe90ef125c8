//===- CommunicationEstimate.cpp - Collectives of a partitioned step ------===//
#include "snn/Dialect/SNN/Transforms/CommunicationEstimate.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "snn/Dialect/SNN/IR/PlanSchema.h"
#include "snn/Dialect/SNN/Transforms/PartitionedValues.h"
#include "snn/Schema/ArtifactOps.h"

#include <map>

using namespace mlir;

namespace snn {

namespace {

/// (kind, mesh axis) -> (calls, bytes); ordered, so the list comes out sorted.
using Volumes = std::map<std::pair<std::string, std::string>, std::pair<int64_t, int64_t>>;

/// Float32 bytes of `value` with every dynamic dimension taken as `batch`.
int64_t bytesOf(Value value, int64_t batch) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t elements = 1;
  for (int64_t dim : type.getShape())
    elements *= ShapedType::isDynamic(dim) ? batch : dim;
  return elements * int64_t(sizeof(float));
}

/// Adds what `op` runs, if it is a collective, to `volumes`.
void count(Operation &op, const PartitionedValues &values, int64_t batch, Volumes &volumes) {
  auto add = [&](const char *kind, StringRef axis, Value value) {
    auto &[calls, bytes] = volumes[{kind, axis.str()}];
    calls += 1;
    bytes += bytesOf(value, batch);
  };
  if (auto reduce = dyn_cast<AllReduceOp>(op))
    add(schema::op::kAllReduce, reduce.getMeshAxis(), reduce.getResult());
  else if (auto gather = dyn_cast<AllGatherOp>(op))
    add(schema::op::kAllGather, gather.getMeshAxis(), gather.getResult());
  else if (auto slice = dyn_cast<AllSliceOp>(op)) {
    Value input = slice.getInput();
    if (values.requiresGrad(input) && !input.getDefiningOp<ParameterOp>())
      add(schema::op::kAllGather, slice.getMeshAxis(), input);
  } else if (auto reduce = dyn_cast<BackwardAllReduceOp>(op)) {
    if (values.requiresGrad(reduce.getInput()))
      add(schema::op::kAllReduce, reduce.getMeshAxis(), reduce.getInput());
  }
}

} // namespace

int64_t perRankBatch(PlanAttr plan) {
  int64_t dp = 1, dim = plan.getDpMeshDim();
  if (dim >= 0 && dim < int64_t(plan.getMeshShape().size()))
    dp = std::max<int64_t>(1, plan.getMeshShape()[dim]);
  return plan.getBatchSize() / dp;
}

std::vector<schema::CommunicationVolume> estimateCommunication(ModuleOp module) {
  std::vector<schema::CommunicationVolume> list;
  auto plan = module->getAttrOfType<PlanAttr>(kPlanAttrName);
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!plan || !plan.getPartitioned() || !main || main.getBody().empty())
    return list;
  PartitionedValues values(main);
  Volumes volumes;
  for (Operation &op : main.getBody().front())
    count(op, values, perRankBatch(plan), volumes);
  for (const auto &[key, volume] : volumes)
    list.push_back({key.first, key.second, volume.first, volume.second});
  return list;
}

schema::PlanSpec planSpecWithCommunication(ModuleOp module, PlanAttr plan) {
  schema::PlanSpec spec = toPlanSpec(plan);
  spec.communication = estimateCommunication(module);
  return spec;
}

} // namespace snn
