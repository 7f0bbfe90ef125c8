//===- ShardAPI.cpp - The one wrapper around MLIR's upstream shard dialect ===//
#include "snn/Support/ShardAPI.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Transforms/Passes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

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

Value annotate(OpBuilder &builder, Location loc, Value value, Value sharding, bool forUsers) {
  return shard::ShardOp::create(builder, loc, value, sharding, forUsers).getResult();
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

LogicalResult keepOnlyGridAxis(Operation *root, int16_t axis) {
  WalkResult result = root->walk([&](shard::ShardingOp sharding) {
    if (!sharding.getStaticHaloSizes().empty() || !sharding.getDynamicHaloSizes().empty() ||
        !sharding.getStaticShardedDimsOffsets().empty() ||
        !sharding.getDynamicShardedDimsOffsets().empty()) {
      sharding.emitError("cannot keep only grid axis ")
          << axis << " of a sharding with halo sizes or sharded-dimension offsets";
      return WalkResult::interrupt();
    }
    SmallVector<shard::GridAxesAttr> split;
    for (shard::GridAxesAttr dim : sharding.getSplitAxes().getAxes()) {
      bool kept = llvm::is_contained(dim.asArrayRef(), axis);
      split.push_back(shard::GridAxesAttr::get(sharding.getContext(),
                                               kept ? ArrayRef<int16_t>{axis}
                                                    : ArrayRef<int16_t>{}));
    }
    // Trailing whole dims are implied; `[[]]` (at least one entry) is "replicated".
    while (split.size() > 1 && split.back().empty())
      split.pop_back();
    sharding.setSplitAxesAttr(shard::GridAxesArrayAttr::get(sharding.getContext(), split));
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

std::unique_ptr<Pass> createShardingPropagationPass() {
  shard::ShardingPropagationOptions options;
  options.traversal = shard::TraversalOrder::ForwardBackward;
  return shard::createShardingPropagation(options);
}

std::unique_ptr<Pass> createPartitionPass() { return shard::createPartition(); }

namespace {

bool needsAnnotation(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.getRank() > 0;
}

/// The error for a value upstream's partition cannot take; `what` names it.
LogicalResult notAnnotated(Operation *op, const Twine &what, StringRef need) {
  return op->emitError() << "cannot partition '" << op->getName() << "': its " << what << " "
                         << need << " (the sharding propagation left it unannotated)";
}

LogicalResult checkOpAnnotated(Operation &op) {
  if (isShardOp(&op) || op.hasTrait<OpTrait::ConstantLike>())
    return success();
  // The terminator returns a result's annotation (propagation adds none for users).
  bool terminator = op.hasTrait<OpTrait::IsTerminator>();
  for (OpOperand &operand : op.getOpOperands()) {
    auto annotation = operand.get().getDefiningOp<shard::ShardOp>();
    if (needsAnnotation(operand.get()) &&
        (!annotation || (!terminator && !annotation.getAnnotateForUsers())))
      return notAnnotated(&op, "operand #" + Twine(operand.getOperandNumber()),
                          "has no sharding for its users");
  }
  for (OpResult result : op.getResults()) {
    auto annotation =
        result.hasOneUse() ? dyn_cast<shard::ShardOp>(*result.user_begin()) : shard::ShardOp();
    if (!annotation || annotation.getAnnotateForUsers())
      return notAnnotated(&op, "result #" + Twine(result.getResultNumber()),
                          "needs exactly one use, its sharding");
  }
  return success();
}

} // namespace

LogicalResult checkFullyAnnotated(Block &block) {
  for (BlockArgument arg : block.getArguments()) {
    if (!needsAnnotation(arg) || (arg.hasOneUse() && isa<shard::ShardOp>(*arg.user_begin())))
      continue;
    return emitError(arg.getLoc()) << "cannot partition: block argument #" << arg.getArgNumber()
                                   << " needs exactly one use, its sharding (the sharding "
                                      "propagation left it unannotated)";
  }
  for (Operation &op : block)
    if (failed(checkOpAnnotated(op)))
      return failure();
  return success();
}

std::optional<Collective> readCollective(Operation *op) {
  auto axesOf = [](ArrayRef<int16_t> axes) { return SmallVector<int16_t, 2>(axes); };
  if (auto reduce = dyn_cast<shard::AllReduceOp>(op))
    return Collective{CollectiveKind::AllReduce, axesOf(reduce.getGridAxes()), -1,
                      reduce.getReduction() == shard::ReductionKind::Sum};
  if (auto gather = dyn_cast<shard::AllGatherOp>(op))
    return Collective{CollectiveKind::AllGather, axesOf(gather.getGridAxes()),
                      gather.getGatherAxis().getSExtValue(), true};
  if (auto slice = dyn_cast<shard::AllSliceOp>(op))
    return Collective{CollectiveKind::AllSlice, axesOf(slice.getGridAxes()),
                      slice.getSliceAxis().getSExtValue(), true};
  return std::nullopt;
}

void eraseAnnotations(Operation *root) {
  SmallVector<shard::ShardOp> annotations;
  root->walk([&](shard::ShardOp op) { annotations.push_back(op); });
  for (shard::ShardOp op : annotations) {
    op.getResult().replaceAllUsesWith(op.getSrc());
    op.erase();
  }
  SmallVector<Operation *> dead;
  root->walk([&](shard::ShardingOp op) {
    if (op->use_empty())
      dead.push_back(op);
  });
  for (Operation *op : dead)
    op->erase();
  SmallVector<shard::GridOp> grids;
  root->walk([&](shard::GridOp grid) { grids.push_back(grid); });
  for (shard::GridOp grid : grids) {
    Operation *scope = SymbolTable::getNearestSymbolTable(grid->getParentOp());
    if (scope && SymbolTable::symbolKnownUseEmpty(grid, scope))
      grid.erase();
  }
}

} // namespace snn::shardapi
