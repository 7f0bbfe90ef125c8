//===- ShardingInterfaceImpl.cpp - snn ops as upstream ShardingInterface ------===//
//
// Like upstream's models for linalg and elementwise ops, each op says how its loops index its
// operands and results (affine maps) and which loops are reductions; upstream's generic code
// then turns shardings of operands into shardings of loops and back.
//
// T (dim 0 of a time-major tensor) is never split: a neuron's membrane state flows from step
// t to t+1, so ranks holding different steps would run one after the other (a pipeline over
// time, not a split), and mean_time reduces over T. The stateless layers refuse the split too,
// so that it cannot enter the graph upstream of a neuron. Some ops keep more loops whole
// (spatial dims of convs and pools, batch_norm's statistics dims). A sharding option keeps
// those loops whole whatever the operands say (propagation then gathers such a split
// operand), and `partition` of an op annotated with such a split is an error.
//
// This file holds the registration and what the models share (ShardingModelSupport.h); the
// models are in TimeMajorShardingModels.cpp (ops on time-major tensors) and
// LayoutShardingModels.cpp (parameter, flatten, reshape). These files and
// lib/Support/ShardAPI.cpp are the only ones that use the upstream shard API: an external
// model is written against the interface itself.
//
//===----------------------------------------------------------------------===//
#include "snn/Dialect/SNN/Interfaces/ShardingInterfaceImpl.h"

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

#include "ShardingModelSupport.h"

using namespace mlir;
using namespace mlir::shard;

namespace snn {
namespace sharding {

int64_t rankOf(Value value) { return cast<RankedTensorType>(value.getType()).getRank(); }

SmallVector<AffineExpr> leadingDims(int64_t count, MLIRContext *ctx) {
  SmallVector<AffineExpr> exprs;
  for (int64_t i = 0; i < count; ++i)
    exprs.push_back(getAffineDimExpr(i, ctx));
  return exprs;
}

namespace {

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

/// The dimension of a value that `map` indexes with `loop` and the grid axes `sharding` splits
/// it on; no axes if none.
std::pair<unsigned, ArrayRef<GridAxis>> splitOfLoop(const Sharding &sharding, AffineMap map,
                                                    unsigned loop) {
  if (!sharding)
    return {0, {}};
  for (auto [pos, expr] : llvm::enumerate(map.getResults())) {
    auto dim = dyn_cast<AffineDimExpr>(expr);
    if (dim && dim.getPosition() == loop && pos < sharding.getSplitAxes().size())
      return {pos, sharding.getSplitAxes()[pos].asArrayRef()};
  }
  return {0, {}};
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

} // namespace

LogicalResult checkPartitionable(Operation *op, ArrayRef<Sharding> operandShardings,
                                 ArrayRef<Sharding> resultShardings,
                                 SymbolTableCollection &symbols, ArrayRef<WholeLoop> whole) {
  SmallVector<AffineMap> maps = cast<ShardingInterface>(op).getIndexingMaps();
  SmallVector<Value> values(op->getOperands());
  llvm::append_range(values, op->getResults());
  SmallVector<Sharding, 4> shardings(operandShardings);
  llvm::append_range(shardings, resultShardings);
  for (auto [index, value, sharding, map] : llvm::enumerate(values, shardings, maps)) {
    for (const WholeLoop &loop : whole) {
      auto [dim, axes] = splitOfLoop(sharding, map, loop.loop);
      if (!axes.empty())
        return op->emitOpError() << "cannot split dimension " << dim << " of "
                                 << valueName(op, index) << " over grid axes " << axesText(axes)
                                 << ": " << loop.why;
    }
    if (failed(checkDivisible(op, index, value, sharding, symbols)))
      return failure();
  }
  return success();
}

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

namespace {

/// Upstream's default gives a 0-d value (PLIF's w) an empty split_axes list, which
/// shard.sharding prints as `[]` but cannot parse back; `[[]]` means the same and round-trips.
Sharding parseable(const Sharding &sharding, MLIRContext *ctx) {
  if (!sharding || !sharding.getSplitAxes().empty())
    return sharding;
  return Sharding::get(sharding.getGridAttr(), {GridAxesAttr::get(ctx, ArrayRef<GridAxis>{})});
}

} // namespace

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

void keepWhole(ShardingOption &option, ArrayRef<WholeLoop> whole) {
  if (option.empty)
    return;
  for (const WholeLoop &loop : whole)
    if (loop.loop < option.shardingArray.size())
      option.shardingArray[loop.loop].clear();
}

namespace {

/// The grid of the first annotated value.
StringRef gridOf(ArrayRef<Sharding> operandShardings, ArrayRef<Sharding> resultShardings) {
  for (const Sharding &sharding : llvm::concat<const Sharding>(operandShardings, resultShardings))
    if (sharding)
      return sharding.getGrid();
  return {};
}

/// The result dimension the bias (operand 2) is added along: the position, in the result's
/// map, of the loop that indexes the bias (linear's `out`: the last dim; conv2d's O: dim 2).
int64_t biasAxis(ShardingInterface model) {
  SmallVector<AffineMap> maps = model.getIndexingMaps();
  unsigned loop = cast<AffineDimExpr>(maps[2].getResult(0)).getPosition();
  return *maps.back().getResultPosition(getAffineDimExpr(loop, model->getContext()));
}

} // namespace

void partitionContraction(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<Sharding> operandShardings, ArrayRef<Sharding> resultShardings,
                          IRMapping &partitionMap, SymbolTableCollection &symbols,
                          OpBuilder &builder) {
  auto model = cast<ShardingInterface>(op);
  IteratorTypes types = model.getLoopIteratorTypes();
  ShardingArray loops = getGridAxisAssignmentForLoopIterators(
      operandShardings, resultShardings, types, model.getIndexingMaps());
  SmallVector<GridAxis> reduced = getReductionGridAxes(types, loops);
  if (reduced.empty()) {
    cloneLocal(*op, partitionedOperands, resultShardings, partitionMap, symbols, builder);
    return;
  }
  Operation *partial =
      cloneLocal(*op, partitionedOperands, resultShardings, partitionMap, symbols, builder);
  Value bias = op->getNumOperands() == 3 ? partitionedOperands[2] : Value();
  if (bias)
    partial->eraseOperand(2);
  Location loc = op->getLoc();
  Value sum = shard::AllReduceOp::create(builder, loc, partial->getResult(0),
                                         gridOf(operandShardings, resultShardings), reduced,
                                         ReductionKind::Sum);
  if (bias)
    sum = BiasAddOp::create(builder, loc, sum.getType(), sum, bias,
                            builder.getI64IntegerAttr(biasAxis(model)))
              .getResult();
  partitionMap.map(op->getResult(0), sum);
}

} // namespace sharding

void registerShardingInterfaceModels(DialectRegistry &registry) {
  func::registerShardingInterfaceExternalModels(registry);
  registry.addExtension(+[](MLIRContext *ctx, SNNDialect *) {
    // `partition` creates shard collectives; a dialect cannot be loaded once the pass
    // manager runs.
    ctx->loadDialect<ShardDialect>();
    sharding::registerLayoutShardingModels(ctx);
    sharding::registerTimeMajorShardingModels(ctx);
  });
}

} // namespace snn
