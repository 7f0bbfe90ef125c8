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
// Convs and pools index their input's H, W by output position, stride and window, which is
// not a projected permutation; their maps give the input's H, W the output's loops instead.
// Those loops are never split, so the shortcut only ever transfers "whole".
//
// This file and lib/Support/ShardAPI.cpp are the only ones that use the upstream shard API:
// an external model is written against the interface itself.
//
//===----------------------------------------------------------------------===//
#include "snn/Dialect/SNN/Transforms/ShardingInterfaceImpl.h"

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

/// A loop an op never splits, and why (the end of a diagnostic).
struct WholeLoop {
  unsigned loop;
  const char *why;
};
constexpr const char *kTimeWhy = "it is T, which is never split (neuron state flows from step to "
                                 "step)";
constexpr const char *kSpatialWhy = "spatial dims are never split (windows would cross shards)";
constexpr const char *kStatisticsWhy = "batch_norm's statistics reduce over it";
constexpr const char *kGroupsWhy = "a grouped conv's channels are never split";

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

/// The checks before `partition`: the `whole` loops unsplit, every split dim divisible.
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

/// Keeps the `whole` loops unsplit. Refusing a split this way rather than failing keeps the
/// op annotated: propagation then marks the operands for a whole use (partition gathers them)
/// and a split result annotation becomes a local slice; an op left without annotations would
/// crash upstream's shard-partition, which needs every value annotated.
void keepWhole(ShardingOption &option, ArrayRef<WholeLoop> whole) {
  if (option.empty)
    return;
  for (const WholeLoop &loop : whole)
    if (loop.loop < option.shardingArray.size())
      option.shardingArray[loop.loop].clear();
}

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

/// The local op; where a reduction loop (linear's `in`, conv's input channels) is split, each
/// process of a reduction group holds a partial sum over its slice: the local op runs without
/// its bias (operand 2), an all-reduce adds the partial sums, and `snn.bias_add` adds the bias
/// once to the sum. Every process thus holds the whole bias and computes the same gradient
/// for it (adding it on one process only would leave the others a zero gradient, and the
/// replicas of the bias would drift apart under an optimizer such as Adam).
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

/// Shared by the ops on time-major tensors, whose loop 0 is T: upstream's sharding option
/// with the op's whole loops (`getWholeLoops`, T by default) kept whole, and the local op.
template <typename Model, typename Op>
struct TimeMajorModel : public ShardingInterface::ExternalModel<Model, Op> {
  SmallVector<WholeLoop> getWholeLoops(Operation *) const { return {{0, kTimeWhy}}; }

  FailureOr<ShardingOption> getShardingOption(Operation *op, ArrayRef<Sharding> operandShardings,
                                              ArrayRef<Sharding> resultShardings) const {
    FailureOr<ShardingOption> option =
        shard::detail::defaultGetShardingOption(op, operandShardings, resultShardings);
    if (succeeded(option))
      keepWhole(*option, self().getWholeLoops(op));
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
    if (failed(checkPartitionable(op, operandShardings, resultShardings, symbols,
                                  self().getWholeLoops(op))))
      return failure();
    partitionContraction(op, partitionedOperands, operandShardings, resultShardings,
                         partitionMap, symbols, builder);
    return success();
  }

private:
  const Model &self() const { return static_cast<const Model &>(*this); }
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

/// mean_time and sum_time: loop 0 (T) a reduction, then one parallel loop per result dim.
template <typename OpTy, ReductionKind Kind>
struct TimeReductionModel : public TimeMajorModel<TimeReductionModel<OpTy, Kind>, OpTy> {
  IteratorTypes getLoopIteratorTypes(Operation *op) const {
    IteratorTypes types(rankOf(op->getOperand(0)), kParallel);
    types.front() = kReduction;
    return types;
  }

  SmallVector<ReductionKind> getReductionLoopIteratorKinds(Operation *) const {
    return {Kind};
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    int64_t rank = rankOf(op->getOperand(0));
    MLIRContext *ctx = op->getContext();
    SmallVector<AffineExpr> rest = leadingDims(rank, ctx);
    rest.erase(rest.begin());
    return {AffineMap::getMultiDimIdentityMap(rank, ctx), AffineMap::get(rank, 0, rest, ctx)};
  }
};

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
};

/// conv2d: loops T, N, O, H', W' (parallel), then C, kh, kw (sums). input [T, N, C, H, W]
/// (H, W on the output's loops, see the top), weight [O, C/g, kh, kw], bias [O], result
/// [T, N, O, H', W']. Splitting O is the colwise (output-channel) split, C the rowwise one.
struct Conv2dModel : public TimeMajorModel<Conv2dModel, Conv2dOp> {
  IteratorTypes getLoopIteratorTypes(Operation *) const {
    IteratorTypes types(5, kParallel);
    types.append(3, kReduction);
    return types;
  }

  SmallVector<ReductionKind> getReductionLoopIteratorKinds(Operation *) const {
    return {ReductionKind::Sum, ReductionKind::Sum, ReductionKind::Sum};
  }

  SmallVector<WholeLoop> getWholeLoops(Operation *op) const {
    SmallVector<WholeLoop> whole = {{0, kTimeWhy}, {3, kSpatialWhy}, {4, kSpatialWhy},
                                    {6, kSpatialWhy}, {7, kSpatialWhy}};
    if (cast<Conv2dOp>(op).getGroups() != 1)
      whole.append({{2, kGroupsWhy}, {5, kGroupsWhy}});
    return whole;
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    MLIRContext *ctx = op->getContext();
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    SmallVector<AffineMap> maps = {AffineMap::get(8, 0, {d(0), d(1), d(5), d(3), d(4)}, ctx),
                                   AffineMap::get(8, 0, {d(2), d(5), d(6), d(7)}, ctx)};
    if (op->getNumOperands() == 3)
      maps.push_back(AffineMap::get(8, 0, {d(2)}, ctx));
    maps.push_back(AffineMap::get(8, 0, {d(0), d(1), d(2), d(3), d(4)}, ctx));
    return maps;
  }
};

/// max_pool2d, avg_pool2d, adaptive_avg_pool2d: one parallel loop per dim of the result (H, W
/// of the input on the output's loops, see the top); T, H and W whole.
template <typename Op>
struct PoolModel : public TimeMajorModel<PoolModel<Op>, Op> {
  IteratorTypes getLoopIteratorTypes(Operation *) const { return IteratorTypes(5, kParallel); }

  SmallVector<WholeLoop> getWholeLoops(Operation *) const {
    return {{0, kTimeWhy}, {3, kSpatialWhy}, {4, kSpatialWhy}};
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    AffineMap identity = AffineMap::getMultiDimIdentityMap(5, op->getContext());
    return {identity, identity};
  }
};

/// batch_norm: one parallel loop per dim, the four per-channel tensors on the channel loop (2).
/// In training its statistics reduce over T, N and the spatial dims, so only the channels
/// are ever split (a split batch would need synchronised statistics, which the local op
/// cannot express).
struct BatchNormModel : public TimeMajorModel<BatchNormModel, BatchNormOp> {
  IteratorTypes getLoopIteratorTypes(Operation *op) const {
    return IteratorTypes(rankOf(op->getResult(0)), kParallel);
  }

  SmallVector<WholeLoop> getWholeLoops(Operation *op) const {
    SmallVector<WholeLoop> whole = {{0, kTimeWhy}};
    for (unsigned loop = 1, rank = rankOf(op->getResult(0)); loop < rank; ++loop)
      if (loop != 2)
        whole.push_back({loop, kStatisticsWhy});
    return whole;
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    int64_t rank = rankOf(op->getResult(0));
    MLIRContext *ctx = op->getContext();
    AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
    AffineMap channel = AffineMap::get(rank, 0, {getAffineDimExpr(2, ctx)}, ctx);
    return {identity, channel, channel, channel, channel, identity};
  }
};

/// reduce_mean: one loop per input dim, its `axes` reductions (parallel, of size 1 in the
/// result, with keepdims). The reduced dims are never split (a mean of a split dim would need
/// the parts' counts), nor T.
struct ReduceMeanModel : public TimeMajorModel<ReduceMeanModel, ReduceMeanOp> {
  IteratorTypes getLoopIteratorTypes(Operation *op) const {
    auto mean = cast<ReduceMeanOp>(op);
    IteratorTypes types(rankOf(mean.getInput()), kParallel);
    if (!mean.getKeepdims())
      for (int64_t axis : mean.getAxes())
        types[axis] = kReduction;
    return types;
  }

  SmallVector<ReductionKind> getReductionLoopIteratorKinds(Operation *op) const {
    auto mean = cast<ReduceMeanOp>(op);
    return SmallVector<ReductionKind>(mean.getKeepdims() ? 0 : mean.getAxes().size(),
                                      ReductionKind::Sum);
  }

  SmallVector<WholeLoop> getWholeLoops(Operation *op) const {
    SmallVector<WholeLoop> whole = {{0, kTimeWhy}};
    for (int64_t axis : cast<ReduceMeanOp>(op).getAxes())
      whole.push_back({unsigned(axis), "reduce_mean averages over it"});
    return whole;
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    auto mean = cast<ReduceMeanOp>(op);
    int64_t rank = rankOf(mean.getInput());
    MLIRContext *ctx = op->getContext();
    SmallVector<AffineExpr> result;
    for (int64_t d = 0; d < rank; ++d)
      if (mean.getKeepdims() || !llvm::is_contained(mean.getAxes(), d))
        result.push_back(getAffineDimExpr(d, ctx));
    return {AffineMap::getMultiDimIdentityMap(rank, ctx), AffineMap::get(rank, 0, result, ctx)};
  }
};

/// spiking_attention [T, N, 3C, L] -> [T, N, C, L]: loops T, N, a channel block and L, the
/// block of the input's and the result's channels the same loop (a rank's whole heads: the
/// partition relaid the fused projection out as `head_groups` groups of q, k and v). The
/// tokens L are never split (the products sum over them), nor T.
struct SpikingAttentionModel : public TimeMajorModel<SpikingAttentionModel, SpikingAttentionOp> {
  IteratorTypes getLoopIteratorTypes(Operation *) const { return IteratorTypes(4, kParallel); }

  SmallVector<WholeLoop> getWholeLoops(Operation *) const {
    return {{0, kTimeWhy}, {3, "attention sums over its tokens"}};
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    AffineMap identity = AffineMap::getMultiDimIdentityMap(4, op->getContext());
    return {identity, identity};
  }

  LogicalResult partition(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<Sharding> operandShardings, ArrayRef<Sharding> resultShardings,
                          IRMapping &partitionMap, SymbolTableCollection &symbols,
                          OpBuilder &builder) const;
};

LogicalResult SpikingAttentionModel::partition(Operation *op, ArrayRef<Value> partitionedOperands,
                                               ArrayRef<Sharding> operandShardings,
                                               ArrayRef<Sharding> resultShardings,
                                               IRMapping &partitionMap,
                                               SymbolTableCollection &symbols,
                                               OpBuilder &builder) const {
  if (failed(checkPartitionable(op, operandShardings, resultShardings, symbols,
                                getWholeLoops(op))))
    return failure();
  auto attention = cast<SpikingAttentionOp>(op);
  int64_t parts = 1;
  if (const Sharding &sharding = operandShardings.front();
      sharding && sharding.getSplitAxes().size() > 2) {
    GridOp grid = getGrid(op, sharding.getGridAttr(), symbols);
    parts = collectiveProcessGroupSize(sharding.getSplitAxes()[2].asArrayRef(), grid);
  }
  int64_t groups = attention.getHeadGroups();
  if (parts > 1 && groups % parts != 0)
    return op->emitOpError() << "cannot split its channels over " << parts
                             << " processes: its q, k and v are laid out for " << groups
                             << " head group(s), so a contiguous part would mix heads";
  auto local = cast<SpikingAttentionOp>(
      cloneLocal(*op, partitionedOperands, resultShardings, partitionMap, symbols, builder));
  local.setNumHeads(attention.getNumHeads() / parts);
  local.setHeadGroups(groups / parts);
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

void registerShardingInterfaceModels(DialectRegistry &registry) {
  func::registerShardingInterfaceExternalModels(registry);
  registry.addExtension(+[](MLIRContext *ctx, SNNDialect *) {
    // `partition` creates shard collectives; a dialect cannot be loaded once the pass
    // manager runs.
    ctx->loadDialect<ShardDialect>();
    ParameterOp::attachInterface<ParameterModel>(*ctx);
    LinearOp::attachInterface<LinearModel>(*ctx);
    FlattenOp::attachInterface<LeadingDimsModel<FlattenOp>>(*ctx);
    ReshapeOp::attachInterface<LeadingDimsModel<ReshapeOp>>(*ctx);
    ReduceMeanOp::attachInterface<ReduceMeanModel>(*ctx);
    SpikingAttentionOp::attachInterface<SpikingAttentionModel>(*ctx);
    Conv2dOp::attachInterface<Conv2dModel>(*ctx);
    BatchNormOp::attachInterface<BatchNormModel>(*ctx);
    MaxPool2dOp::attachInterface<PoolModel<MaxPool2dOp>>(*ctx);
    AvgPool2dOp::attachInterface<PoolModel<AvgPool2dOp>>(*ctx);
    AdaptiveAvgPool2dOp::attachInterface<PoolModel<AdaptiveAvgPool2dOp>>(*ctx);
    MeanTimeOp::attachInterface<TimeReductionModel<MeanTimeOp, ReductionKind::Average>>(*ctx);
    SumTimeOp::attachInterface<TimeReductionModel<SumTimeOp, ReductionKind::Sum>>(*ctx);
    DropoutOp::attachInterface<ElementwiseModel<DropoutOp>>(*ctx);
    AddOp::attachInterface<ElementwiseModel<AddOp>>(*ctx);
    MulOp::attachInterface<ElementwiseModel<MulOp>>(*ctx);
    IFNodeOp::attachInterface<ElementwiseModel<IFNodeOp>>(*ctx);
    LIFNodeOp::attachInterface<ElementwiseModel<LIFNodeOp>>(*ctx);
    PLIFNodeOp::attachInterface<ElementwiseModel<PLIFNodeOp>>(*ctx);
  });
}

} // namespace snn
