//===- ShardAPI.cpp - The one wrapper around MLIR's upstream shard dialect ===//
#include "snn/Support/ShardAPI.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Transforms/Passes.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace snn::shardapi {

void registerShardDialect(DialectRegistry &registry) { registry.insert<shard::ShardDialect>(); }

void registerShardPasses() {
  shard::registerShardingPropagation();
  shard::registerPartition();
}

void createGrid(OpBuilder &builder, Location loc, StringRef name, ArrayRef<int64_t> shape) {
  shard::GridOp::create(builder, loc, name, shape);
}

Value createSharding(OpBuilder &builder, Location loc, StringRef grid, const SplitAxes &axes) {
  SmallVector<shard::GridAxesAttr> split;
  for (const auto &dim : axes)
    split.push_back(shard::GridAxesAttr::get(builder.getContext(), dim));
  // The op needs at least one (possibly empty) entry: `[[]]` is "replicated".
  if (split.empty())
    split.push_back(shard::GridAxesAttr::get(builder.getContext(), ArrayRef<int16_t>{}));
  return shard::ShardingOp::create(builder, loc, FlatSymbolRefAttr::get(builder.getContext(), grid),
                                   split)
      .getResult();
}

Value annotate(OpBuilder &builder, Location loc, Value value, Value sharding) {
  return shard::ShardOp::create(builder, loc, value, sharding, /*annotate_for_users=*/false)
      .getResult();
}

bool isShardOp(Operation *op) {
  return op->getDialect() && isa<shard::ShardDialect>(op->getDialect());
}

bool isPlanAnnotationOp(Operation *op) {
  return isa<shard::GridOp, shard::ShardingOp, shard::ShardOp>(op);
}

Value annotatedSource(Operation *op) {
  if (auto annotation = dyn_cast<shard::ShardOp>(op))
    return annotation.getSrc();
  return nullptr;
}

SplitAxes annotationAxes(Operation *op) {
  SplitAxes axes;
  auto annotation = dyn_cast<shard::ShardOp>(op);
  if (!annotation)
    return axes;
  auto sharding = annotation.getSharding().getDefiningOp<shard::ShardingOp>();
  if (!sharding)
    return axes;
  for (shard::GridAxesAttr dim : sharding.getSplitAxes().getAxes())
    axes.emplace_back(dim.asArrayRef().begin(), dim.asArrayRef().end());
  return axes;
}

} // namespace snn::shardapi
