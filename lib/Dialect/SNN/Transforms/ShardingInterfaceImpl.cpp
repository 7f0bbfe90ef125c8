//===- ShardingInterfaceImpl.cpp - snn ops as upstream ShardingInterface ------===//
//
// Like upstream's models for linalg and elementwise ops, each op says how its loops index its
// operands and results (affine maps) and which loops are reductions; upstream's generic code
// then turns shardings of operands into shardings of loops and back.
//
// T (dim 0 of a time-major tensor) is never split: a neuron's membrane state flows from step
// t to t+1, so ranks holding different steps would run one after the other (a pipeline over
// time, not a split), and mean_time reduces over T. The stateless layers refuse the split too,
// so that it cannot enter the graph upstream of a neuron. A sharding option keeps T whole
// whatever its operands say (propagation then gathers a T-split operand), and `partition` of
// an op annotated with a T split is an error.
//
// This file and lib/Support/ShardAPI.cpp are the only ones that use the upstream shard API:
// an external model is written against the interface itself.
//
//===----------------------------------------------------------------------===//
#include "snn/Dialect/SNN/Transforms/ShardingInterfaceImpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/Extensions/ShardingExtensions.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterfaceImpl.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include "snn/Dialect/SNN/IR/SNNOps.h"

using namespace mlir;
using namespace mlir::shard;

namespace snn {
namespace {

using IteratorTypes = SmallVector<utils::IteratorType>;
constexpr auto kParallel = utils::IteratorType::parallel;
constexpr auto kReduction = utils::IteratorType::reduction;

int64_t rankOf(Value value) { return cast<RankedTensorType>(value.getType()).getRank(); }

/// `d0, ..., d(count-1)`.
SmallVector<AffineExpr> leadingDims(int64_t count, MLIRContext *ctx) {
  SmallVector<AffineExpr> exprs;
  for (int64_t i = 0; i < count; ++i)
    exprs.push_back(getAffineDimExpr(i, ctx));
  return exprs;
}

std::string axesText(ArrayRef<GridAxis> axes) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[";
  llvm::interleaveComma(axes, os);
  os << "]";
  return text;
}

std::string valueName(Operation *op, unsigned index) {
  unsigned operands = op->getNumOperands();
  return index < operands ? "operand #" + std::to_string(index)
                          : "result #" + std::to_string(index - operands);
}

/// The grid axes `sharding` splits the dimension that `map` indexes with loop 0 (T) on.
ArrayRef<GridAxis> timeAxes(const Sharding &sharding, AffineMap map) {
  if (!sharding)
    return {};
  for (auto [pos, expr] : llvm::enumerate(map.getResults())) {
    auto dim = dyn_cast<AffineDimExpr>(expr);
    if (dim && dim.getPosition() == 0 && pos < sharding.getSplitAxes().size())
      return sharding.getSplitAxes()[pos].asArrayRef();
  }
  return {};
}

/// A static dimension that a split does not divide would give the processes unequal shards,
/// which upstream's partitioning assumes away.
LogicalResult checkDivisible(Operation *op, unsigned index, Value value, const Sharding &sharding,
                             SymbolTableCollection &symbols) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!sharding || !type)
    return success();
  GridOp grid = getGridOrNull(op, sharding.getGridAttr(), symbols);
  if (!grid)
    return op->emitOpError() << "has no grid " << sharding.getGridAttr();
  for (auto [dim, axes] : llvm::enumerate(sharding.getSplitAxes())) {
    if (static_cast<int64_t>(dim) >= type.getRank() || axes.empty())
      continue;
    int64_t size = type.getDimSize(dim);
    int64_t count = collectiveProcessGroupSize(axes.asArrayRef(), grid);
    if (ShapedType::isDynamic(size) || ShapedType::isDynamic(count) || size % count == 0)
      continue;
    return op->emitOpError() << "cannot split dimension " << dim << " (size " << size << ") of "
                             << valueName(op, index) << " over the " << count
                             << " processes of grid axes " << axesText(axes.asArrayRef())
                             << ": it does not divide";
  }
  return success();
}

/// The checks before `partition`: T whole (for time-major ops), every split dim divisible.
LogicalResult checkPartitionable(Operation *op, ArrayRef<Sharding> operandShardings,
                                 ArrayRef<Sharding> resultShardings,
                                 SymbolTableCollection &symbols, bool timeMajor) {
  SmallVector<AffineMap> maps = cast<ShardingInterface>(op).getIndexingMaps();
  SmallVector<Value> values(op->getOperands());
  llvm::append_range(values, op->getResults());
  SmallVector<Sharding, 4> shardings(operandShardings);
  llvm::append_range(shardings, resultShardings);
  for (auto [index, value, sharding, map] : llvm::enumerate(values, shardings, maps)) {
    ArrayRef<GridAxis> time = timeMajor ? timeAxes(sharding, map) : ArrayRef<GridAxis>{};
    if (!time.empty())
      return op->emitOpError() << "cannot split the time dimension (0) of "
                               << valueName(op, index) << " over grid axes " << axesText(time)
                               << ": T is never split (neuron state flows from step to step)";
    if (failed(checkDivisible(op, index, value, sharding, symbols)))
      return failure();
  }
  return success();
}

/// Clones `op` onto `operands`, gives its results their local types and maps them.
Operation *cloneLocal(Operation &op, ArrayRef<Value> operands, ArrayRef<Sharding> resultShardings,
                      IRMapping &partitionMap, SymbolTableCollection &symbols,
                      OpBuilder &builder) {
  IRMapping mapping;
  mapping.map(op.getOperands(), operands);
  Operation *local = builder.clone(op, mapping);
  for (auto [result, localResult, sharding] :
       llvm::zip_equal(op.getResults(), local->getResults(), resultShardings)) {
    if (sharding)
      localResult.setType(
          shardType(localResult.getType(), getGrid(&op, sharding.getGridAttr(), symbols), sharding));
    partitionMap.map(result, localResult);
  }
  return local;
}

/// Upstream's default gives a 0-d value (PLIF's w) an empty split_axes list, which
/// shard.sharding prints as `[]` but cannot parse back; `[[]]` means the same and round-trips.
Sharding parseable(const Sharding &sharding, MLIRContext *ctx) {
  if (!sharding || !sharding.getSplitAxes().empty())
    return sharding;
  return Sharding::get(sharding.getGridAttr(), {GridAxesAttr::get(ctx, ArrayRef<GridAxis>{})});
}

/// Annotates the results, then the operands, with `shardings` (operands first in the list),
/// as upstream's default does.
LogicalResult addAnnotations(Operation *op, OpBuilder &builder,
                             FailureOr<std::vector<Sharding>> shardings) {
  if (failed(shardings))
    return failure();
  MLIRContext *ctx = op->getContext();
  unsigned numOperands = op->getNumOperands();
  builder.setInsertionPointAfter(op);
  for (OpResult result : op->getResults())
    maybeInsertTargetShardingAnnotation(
        parseable((*shardings)[numOperands + result.getResultNumber()], ctx), result, builder);
  OpBuilder::InsertionGuard guard(builder);
  for (OpOperand &operand : op->getOpOperands())
    maybeInsertSourceShardingAnnotation(parseable((*shardings)[operand.getOperandNumber()], ctx),
                                        operand, builder);
  return success();
}

/// Keeps loop 0 (T) whole. Refusing the split this way rather than failing keeps the op
/// annotated: propagation then marks the operands for a T-whole use (partition gathers them)
/// and a T-split result annotation becomes a local slice; an op left without annotations
/// would crash upstream's shard-partition, which needs every value annotated.
void keepLoop0Whole(ShardingOption &option) {
  if (!option.empty && !option.shardingArray.empty())
    option.shardingArray.front().clear();
}

/// Shared by the ops on time-major tensors, whose loop 0 is T: upstream's sharding option
/// with T kept whole, and a local clone of the op.
template <typename Model, typename Op>
struct TimeMajorModel : public ShardingInterface::ExternalModel<Model, Op> {
  FailureOr<ShardingOption> getShardingOption(Operation *op, ArrayRef<Sharding> operandShardings,
                                              ArrayRef<Sharding> resultShardings) const {
    FailureOr<ShardingOption> option =
        shard::detail::defaultGetShardingOption(op, operandShardings, resultShardings);
    if (succeeded(option))
      keepLoop0Whole(*option);
    return option;
  }

  LogicalResult addShardingAnnotations(Operation *op, OpBuilder &builder,
                                       const ShardingOption &option) const {
    return addAnnotations(op, builder, shard::detail::defaultGetShardingAnnotations(op, option));
  }

  LogicalResult partition(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<Sharding> operandShardings, ArrayRef<Sharding> resultShardings,
                          IRMapping &partitionMap, SymbolTableCollection &symbols,
                          OpBuilder &builder) const {
    if (failed(checkPartitionable(op, operandShardings, resultShardings, symbols, true)))
      return failure();
    cloneLocal(*op, partitionedOperands, resultShardings, partitionMap, symbols, builder);
    return success();
  }
};

/// Neurons, dropout, add, mul: one parallel loop per dim of the result; an operand of the
/// result's rank is indexed like it, a 0-d one (PLIF's w) by no loop.
template <typename Op>
struct ElementwiseModel : public TimeMajorModel<ElementwiseModel<Op>, Op> {
  IteratorTypes getLoopIteratorTypes(Operation *op) const {
    return IteratorTypes(rankOf(op->getResult(0)), kParallel);
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    int64_t rank = rankOf(op->getResult(0));
    MLIRContext *ctx = op->getContext();
    SmallVector<AffineMap> maps;
    for (Value operand : op->getOperands())
      maps.push_back(rankOf(operand) == 0 ? AffineMap::get(rank, 0, ctx)
                                          : AffineMap::getMultiDimIdentityMap(rank, ctx));
    maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
    return maps;
  }
};

/// mean_time: loop 0 (T) a reduction, then one parallel loop per result dim.
struct MeanTimeModel : public TimeMajorModel<MeanTimeModel, MeanTimeOp> {
  IteratorTypes getLoopIteratorTypes(Operation *op) const {
    IteratorTypes types(rankOf(op->getOperand(0)), kParallel);
    types.front() = kReduction;
    return types;
  }

  SmallVector<ReductionKind> getReductionLoopIteratorKinds(Operation *) const {
    return {ReductionKind::Average};
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    int64_t rank = rankOf(op->getOperand(0));
    MLIRContext *ctx = op->getContext();
    SmallVector<AffineExpr> rest = leadingDims(rank, ctx);
    rest.erase(rest.begin());
    return {AffineMap::getMultiDimIdentityMap(rank, ctx), AffineMap::get(rank, 0, rest, ctx)};
  }
};

/// An all-zero tensor in place of `value` on every process but the first of the group that
/// `axes` span.
Value onFirstProcessOnly(OpBuilder &builder, Location loc, StringRef grid,
                         ArrayRef<GridAxis> axes, Value value) {
  auto indices = ProcessMultiIndexOp::create(builder, loc, grid, axes).getResults();
  Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
  Value first;
  for (Value index : indices) {
    Value isZero = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, index, zero);
    first = first ? arith::AndIOp::create(builder, loc, first, isZero).getResult() : isZero;
  }
  auto type = cast<RankedTensorType>(value.getType());
  auto zeros = DenseElementsAttr::get(type, builder.getZeroAttr(type.getElementType()));
  Value zeroTensor = arith::ConstantOp::create(builder, loc, type, zeros);
  return arith::SelectOp::create(builder, loc, first, value, zeroTensor);
}

/// linear as a matmul: loops are the input's leading dims (T, N, ...), `out`, then `in` (a
/// sum). input [lead..., in], weight [out, in], bias [out], result [lead..., out].
struct LinearModel : public TimeMajorModel<LinearModel, LinearOp> {
  IteratorTypes getLoopIteratorTypes(Operation *op) const {
    IteratorTypes types(rankOf(op->getOperand(0)), kParallel);
    types.push_back(kReduction);
    return types;
  }

  SmallVector<ReductionKind> getReductionLoopIteratorKinds(Operation *) const {
    return {ReductionKind::Sum};
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    MLIRContext *ctx = op->getContext();
    int64_t lead = rankOf(op->getOperand(0)) - 1, loops = lead + 2;
    AffineExpr out = getAffineDimExpr(lead, ctx), in = getAffineDimExpr(lead + 1, ctx);
    SmallVector<AffineExpr> input = leadingDims(lead, ctx), result = input;
    input.push_back(in);
    result.push_back(out);
    SmallVector<AffineMap> maps = {AffineMap::get(loops, 0, input, ctx),
                                   AffineMap::get(loops, 0, {out, in}, ctx)};
    if (op->getNumOperands() == 3)
      maps.push_back(AffineMap::get(loops, 0, {out}, ctx));
    maps.push_back(AffineMap::get(loops, 0, result, ctx));
    return maps;
  }

  LogicalResult partition(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<Sharding> operandShardings, ArrayRef<Sharding> resultShardings,
                          IRMapping &partitionMap, SymbolTableCollection &symbols,
                          OpBuilder &builder) const;
};

LogicalResult LinearModel::partition(Operation *op, ArrayRef<Value> partitionedOperands,
                                     ArrayRef<Sharding> operandShardings,
                                     ArrayRef<Sharding> resultShardings, IRMapping &partitionMap,
                                     SymbolTableCollection &symbols, OpBuilder &builder) const {
  if (failed(checkPartitionable(op, operandShardings, resultShardings, symbols, true)))
    return failure();
  IteratorTypes types = getLoopIteratorTypes(op);
  ShardingArray loops = getGridAxisAssignmentForLoopIterators(
      operandShardings, resultShardings, types, getIndexingMaps(op));
  SmallVector<GridAxis> reduced = getReductionGridAxes(types, loops);
  if (reduced.empty()) {
    cloneLocal(*op, partitionedOperands, resultShardings, partitionMap, symbols, builder);
    return success();
  }
  // Each process of a reduction group holds a partial sum over its slice of `in`: the bias
  // goes to the group's first process only, so that the all-reduce adds it once.
  StringRef grid = operandShardings[1].getGrid();
  SmallVector<Value> operands(partitionedOperands);
  if (operands.size() == 3)
    operands[2] = onFirstProcessOnly(builder, op->getLoc(), grid, reduced, operands[2]);
  Operation *partial = cloneLocal(*op, operands, resultShardings, partitionMap, symbols, builder);
  Value sum = AllReduceOp::create(builder, op->getLoc(), partial->getResult(0), grid, reduced,
                                  ReductionKind::Sum);
  partitionMap.map(op->getResult(0), sum);
  return success();
}

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
    if (failed(checkPartitionable(op, operandShardings, resultShardings, symbols, false)))
      return failure();
    Value value = builder.clone(*op)->getResult(0);
    const Sharding &sharding = resultShardings.front();
    if (sharding) {
      GridOp grid = getGrid(op, sharding.getGridAttr(), symbols);
      for (auto [dim, axes] : llvm::enumerate(sharding.getSplitAxes()))
        if (!axes.empty())
          value = AllSliceOp::create(builder, op->getLoc(), value, grid, axes.asArrayRef(), dim);
    }
    partitionMap.map(op->getResult(0), value);
    return success();
  }
};

/// flatten [T, N, d1, ..., dk] -> [T, N, d1*...*dk]: loops T, N and F, where F is d1 of the
/// input and the flattened dim of the result. A split of d1 is a contiguous block of the
/// flattened dim; d2..dk take no loop (a constant in the map) and are never split. The maps
/// are not projected permutations on the input side, which upstream's generic code assumes,
/// so this model derives and places the shardings itself.
struct FlattenModel : public ShardingInterface::ExternalModel<FlattenModel, FlattenOp> {
  IteratorTypes getLoopIteratorTypes(Operation *) const { return IteratorTypes(3, kParallel); }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    MLIRContext *ctx = op->getContext();
    SmallVector<AffineExpr> input = leadingDims(3, ctx);
    input.resize(rankOf(op->getOperand(0)), getAffineConstantExpr(0, ctx));
    return {AffineMap::get(3, 0, input, ctx), AffineMap::getMultiDimIdentityMap(3, ctx)};
  }

  FailureOr<ShardingOption> getShardingOption(Operation *op, ArrayRef<Sharding> operandShardings,
                                              ArrayRef<Sharding> resultShardings) const;
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
    if (failed(checkPartitionable(op, operandShardings, resultShardings, symbols, true)))
      return failure();
    cloneLocal(*op, partitionedOperands, resultShardings, partitionMap, symbols, builder);
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

FailureOr<ShardingOption> FlattenModel::getShardingOption(Operation *,
                                                          ArrayRef<Sharding> operandShardings,
                                                          ArrayRef<Sharding> resultShardings) const {
  ShardingArray loops(3);
  FlatSymbolRefAttr grid;
  if (failed(mergeFlattenLoops(resultShardings.front(), loops, grid)) ||
      failed(mergeFlattenLoops(operandShardings.front(), loops, grid)))
    return failure();
  if (!grid)
    return ShardingOption::makeEmpty();
  ShardingOption option(loops, grid);
  keepLoop0Whole(option);
  return option;
}

FailureOr<std::vector<Sharding>>
FlattenModel::getShardingAnnotations(Operation *op, const ShardingOption &option) const {
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

void registerShardingInterfaceModels(DialectRegistry &registry) {
  func::registerShardingInterfaceExternalModels(registry);
  registry.addExtension(+[](MLIRContext *ctx, SNNDialect *) {
    // `partition` creates shard collectives and, for a reduction-split linear, arith ops;
    // they cannot be loaded once the pass manager runs.
    ctx->loadDialect<ShardDialect, arith::ArithDialect>();
    ParameterOp::attachInterface<ParameterModel>(*ctx);
    LinearOp::attachInterface<LinearModel>(*ctx);
    FlattenOp::attachInterface<FlattenModel>(*ctx);
    MeanTimeOp::attachInterface<MeanTimeModel>(*ctx);
    DropoutOp::attachInterface<ElementwiseModel<DropoutOp>>(*ctx);
    AddOp::attachInterface<ElementwiseModel<AddOp>>(*ctx);
    MulOp::attachInterface<ElementwiseModel<MulOp>>(*ctx);
    IFNodeOp::attachInterface<ElementwiseModel<IFNodeOp>>(*ctx);
    LIFNodeOp::attachInterface<ElementwiseModel<LIFNodeOp>>(*ctx);
    PLIFNodeOp::attachInterface<ElementwiseModel<PLIFNodeOp>>(*ctx);
  });
}

} // namespace snn
