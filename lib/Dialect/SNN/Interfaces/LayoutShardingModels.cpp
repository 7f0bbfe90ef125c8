//===- LayoutShardingModels.cpp - ShardingInterface of parameter, flatten, reshape ---===//
//
// The models of the ops that hold values or change their layout rather than compute on every
// step: a parameter (a split one is sliced locally, with no communication), and flatten and
// reshape, whose maps are not projected permutations, so their model derives and places the
// shardings itself instead of upstream's generic code.
//
//===----------------------------------------------------------------------===//
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/STLExtras.h"

#include "snn/Dialect/SNN/IR/SNNOps.h"

#include "ShardingModelSupport.h"

using namespace mlir;
using namespace mlir::shard;

namespace snn::sharding {
namespace {

/// A parameter: one parallel loop per dim. A split parameter is the whole value sliced on
/// every process (no communication): the program stays the same on every rank.
struct ParameterModel : public ShardingInterface::ExternalModel<ParameterModel, ParameterOp> {
  IteratorTypes getLoopIteratorTypes(Operation *op) const {
    return IteratorTypes(rankOf(op->getResult(0)), kParallel);
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    return {AffineMap::getMultiDimIdentityMap(rankOf(op->getResult(0)), op->getContext())};
  }

  LogicalResult addShardingAnnotations(Operation *op, OpBuilder &builder,
                                       const ShardingOption &option) const {
    return addAnnotations(op, builder, shard::detail::defaultGetShardingAnnotations(op, option));
  }

  LogicalResult partition(Operation *op, ArrayRef<Value>, ArrayRef<Sharding> operandShardings,
                          ArrayRef<Sharding> resultShardings, IRMapping &partitionMap,
                          SymbolTableCollection &symbols, OpBuilder &builder) const {
    if (failed(checkPartitionable(op, operandShardings, resultShardings, symbols, {})))
      return failure();
    Value value = builder.clone(*op)->getResult(0);
    const Sharding &sharding = resultShardings.front();
    if (sharding) {
      GridOp grid = getGrid(op, sharding.getGridAttr(), symbols);
      for (auto [dim, axes] : llvm::enumerate(sharding.getSplitAxes()))
        if (!axes.empty())
          value = shard::AllSliceOp::create(builder, op->getLoc(), value, grid, axes.asArrayRef(), dim);
    }
    partitionMap.map(op->getResult(0), value);
    return success();
  }
};

/// flatten [T, N, d1, ..., dk] -> [T, N, d1*...*dk] and reshape [T, N, d1, ...] -> [T, N,
/// e1, ...]: loops T, N and F, where F is d1 of the input and e1 (flatten: the flattened dim)
/// of the result. A split of d1 is a contiguous block of F when F starts with whole d1 blocks:
/// always for flatten, for a reshape only when e1 == d1 (a Spikformer's [C, 1, L] <-> [C, L]
/// views keep the channels first); any other reshape keeps F whole. The later dims take no
/// loop (a constant in the map) and are never split. The maps are not projected permutations,
/// which upstream's generic code assumes, so this model derives and places the shardings.
template <typename Op>
struct LeadingDimsModel : public ShardingInterface::ExternalModel<LeadingDimsModel<Op>, Op> {
  IteratorTypes getLoopIteratorTypes(Operation *) const { return IteratorTypes(3, kParallel); }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    MLIRContext *ctx = op->getContext();
    auto map = [&](Value value) {
      SmallVector<AffineExpr> dims = leadingDims(3, ctx);
      dims.resize(rankOf(value), getAffineConstantExpr(0, ctx));
      return AffineMap::get(3, 0, dims, ctx);
    };
    return {map(op->getOperand(0)), map(op->getResult(0))};
  }

  static SmallVector<WholeLoop> wholeLoops(Operation *op) {
    auto in = cast<RankedTensorType>(op->getOperand(0).getType());
    auto out = cast<RankedTensorType>(op->getResult(0).getType());
    SmallVector<WholeLoop> whole = {{0, kTimeWhy}};
    if (isa<ReshapeOp>(op) && (in.getRank() < 3 || out.getRank() < 3 ||
                               in.getDimSize(2) != out.getDimSize(2)))
      whole.push_back({2, "a reshape that regroups its first per-step dim is never split"});
    return whole;
  }

  FailureOr<ShardingOption> getShardingOption(Operation *op, ArrayRef<Sharding> operandShardings,
                                              ArrayRef<Sharding> resultShardings) const;

  /// The input's later dims are whole, so both sides carry the same split (an interface
  /// method: propagation calls it too).
  FailureOr<std::vector<Sharding>> getShardingAnnotations(Operation *op,
                                                          const ShardingOption &option) const;

  LogicalResult addShardingAnnotations(Operation *op, OpBuilder &builder,
                                       const ShardingOption &option) const {
    return addAnnotations(op, builder, getShardingAnnotations(op, option));
  }

  LogicalResult partition(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<Sharding> operandShardings, ArrayRef<Sharding> resultShardings,
                          IRMapping &partitionMap, SymbolTableCollection &symbols,
                          OpBuilder &builder) const {
    if (failed(checkPartitionable(op, operandShardings, resultShardings, symbols,
                                  wholeLoops(op))))
      return failure();
    Operation *local =
        cloneLocal(*op, partitionedOperands, resultShardings, partitionMap, symbols, builder);
    if (auto reshape = dyn_cast<ReshapeOp>(local)) {
      // The per-step dims of the local result, which a split of e1 made smaller.
      auto type = cast<RankedTensorType>(reshape.getResult().getType());
      reshape.setShape(type.getShape().drop_front(2));
    }
    return success();
  }
};

/// Adds the split of `sharding`'s first three dims to `loops` (a split of a later dim is
/// refused: left out); fails on a disagreement with what `loops` already holds.
LogicalResult mergeFlattenLoops(const Sharding &sharding, ShardingArray &loops,
                                FlatSymbolRefAttr &grid) {
  if (!sharding)
    return success();
  if (grid && grid != sharding.getGridAttr())
    return failure();
  grid = sharding.getGridAttr();
  for (auto [dim, axes] : llvm::enumerate(sharding.getSplitAxes())) {
    if (axes.empty())
      continue;
    SmallVector<GridAxis> split(axes.asArrayRef());
    if (dim >= loops.size())
      continue;
    if (!loops[dim].empty() && loops[dim] != split)
      return failure();
    loops[dim] = split;
  }
  return success();
}

template <typename Op>
FailureOr<ShardingOption>
LeadingDimsModel<Op>::getShardingOption(Operation *op, ArrayRef<Sharding> operandShardings,
                                        ArrayRef<Sharding> resultShardings) const {
  ShardingArray loops(3);
  FlatSymbolRefAttr grid;
  if (failed(mergeFlattenLoops(resultShardings.front(), loops, grid)) ||
      failed(mergeFlattenLoops(operandShardings.front(), loops, grid)))
    return failure();
  if (!grid)
    return ShardingOption::makeEmpty();
  ShardingOption option(loops, grid);
  keepWhole(option, wholeLoops(op));
  return option;
}

template <typename Op>
FailureOr<std::vector<Sharding>>
LeadingDimsModel<Op>::getShardingAnnotations(Operation *op, const ShardingOption &option) const {
  MLIRContext *ctx = op->getContext();
  SmallVector<GridAxesAttr> axes;
  for (int64_t loop = 0; loop < 3; ++loop)
    axes.push_back(GridAxesAttr::get(
        ctx, loop < static_cast<int64_t>(option.shardingArray.size())
                 ? ArrayRef<GridAxis>(option.shardingArray[loop])
                 : ArrayRef<GridAxis>{}));
  while (axes.size() > 1 && axes.back().empty())
    axes.pop_back();
  // The input's d2..dk are whole, so both sides carry the same split.
  Sharding sharding = Sharding::get(option.grid, axes);
  return std::vector<Sharding>{sharding, sharding};
}

} // namespace

void registerLayoutShardingModels(MLIRContext *ctx) {
  ParameterOp::attachInterface<ParameterModel>(*ctx);
  FlattenOp::attachInterface<LeadingDimsModel<FlattenOp>>(*ctx);
  ReshapeOp::attachInterface<LeadingDimsModel<ReshapeOp>>(*ctx);
}

} // namespace snn::sharding
