//===- TimeMajorShardingModels.cpp - ShardingInterface of time-major snn ops ---===//
//
// Models of the ops on time-major [T, N, ...] tensors: each gives its loops and indexing
// maps; TimeMajorModel keeps T and the op's other whole loops unsplit.
//
// Convs and pools index their input's H, W by output position, stride and window, which is
// not a projected permutation; their maps give the input's H, W the output's loops instead.
// Those loops are never split, so the shortcut only ever transfers "whole".
//
//===----------------------------------------------------------------------===//
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/STLExtras.h"

#include "snn/Dialect/SNN/IR/SNNOps.h"
#include "snn/Schema/NeuronProgram.h"

#include "ShardingModelSupport.h"

using namespace mlir;
using namespace mlir::shard;

namespace snn::sharding {
namespace {

constexpr const char *kSpatialWhy = "spatial dims are never split (windows would cross shards)";
constexpr const char *kStatisticsWhy = "batch_norm's statistics reduce over it";
constexpr const char *kGroupsWhy = "a grouped conv's channels are never split";

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

/// snn.neuron: elementwise over its input; an operand [C] follows the channels (dim 2), one
/// [T, C] the steps and channels, a per-step [T] the steps, a scalar is whole everywhere.
struct DescribedNeuronModel : public TimeMajorModel<DescribedNeuronModel, NeuronOp> {
  IteratorTypes getLoopIteratorTypes(Operation *op) const {
    return IteratorTypes(rankOf(op->getResult(0)), kParallel);
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    int64_t rank = rankOf(op->getResult(0));
    MLIRContext *ctx = op->getContext();
    AffineExpr time = getAffineDimExpr(0, ctx), channel = getAffineDimExpr(2, ctx);
    SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx)};
    auto neuron = cast<NeuronOp>(op);
    for (auto [spelled, param] : llvm::zip(neuron.getOperandNames(), neuron.getParams())) {
      int64_t paramRank = rankOf(param);
      bool perStep = snn::schema::parseOperandName(cast<StringAttr>(spelled).getValue()).second;
      maps.push_back(paramRank == 0   ? AffineMap::get(rank, 0, ctx)
                     : paramRank == 2 ? AffineMap::get(rank, 0, {time, channel}, ctx)
                     : perStep        ? AffineMap::get(rank, 0, {time}, ctx)
                                      : AffineMap::get(rank, 0, {channel}, ctx));
    }
    maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
    return maps;
  }
};

/// snn.recurrent_neuron [T, N, F]: loops T, N, F and the fed-back features G that the
/// recurrent weight [F, G] sums over. The steps run in order and every feature reads every
/// other one's last output, so only the batch is ever split.
struct RecurrentNeuronModel : public TimeMajorModel<RecurrentNeuronModel, RecurrentNeuronOp> {
  IteratorTypes getLoopIteratorTypes(Operation *) const { return IteratorTypes(4, kParallel); }

  SmallVector<WholeLoop> getWholeLoops(Operation *) const {
    constexpr const char *kFeedbackWhy = "the recurrent weight mixes every feature";
    return {{0, kTimeWhy}, {2, kFeedbackWhy}, {3, kFeedbackWhy}};
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    MLIRContext *ctx = op->getContext();
    AffineExpr time = getAffineDimExpr(0, ctx), batch = getAffineDimExpr(1, ctx);
    AffineExpr feature = getAffineDimExpr(2, ctx), fedBack = getAffineDimExpr(3, ctx);
    AffineMap features = AffineMap::get(4, 0, {time, batch, feature}, ctx);
    SmallVector<AffineMap> maps = {features, AffineMap::get(4, 0, {feature, fedBack}, ctx),
                                   AffineMap::get(4, 0, {feature}, ctx)};
    auto neuron = cast<RecurrentNeuronOp>(op);
    for (auto [spelled, param] : llvm::zip(neuron.getOperandNames(), neuron.getParams())) {
      int64_t paramRank = rankOf(param);
      bool perStep = snn::schema::parseOperandName(cast<StringAttr>(spelled).getValue()).second;
      maps.push_back(paramRank == 0   ? AffineMap::get(4, 0, ctx)
                     : paramRank == 2 ? AffineMap::get(4, 0, {time, feature}, ctx)
                     : perStep        ? AffineMap::get(4, 0, {time}, ctx)
                                      : AffineMap::get(4, 0, {feature}, ctx));
    }
    maps.push_back(features);
    return maps;
  }
};

/// snn.parallel_neuron: out[t, n, ...] sums weight[t, s] x[s, n, ...] over the input steps s,
/// so it is elementwise over every dim but time. Loops: one parallel per result dim, then s
/// (a sum); T and s stay whole. The weight and bias index only T and s (SlidingPSN's [k]
/// weight and [T, 1]'s unit dim on s, the shortcut of the top: s is never split), so they are
/// whole on every rank, their gradients summed over the ranks (backward collectives).
struct ParallelNeuronModel : public TimeMajorModel<ParallelNeuronModel, ParallelNeuronOp> {
  IteratorTypes getLoopIteratorTypes(Operation *op) const {
    IteratorTypes types(rankOf(op->getResult(0)), kParallel);
    types.push_back(kReduction);
    return types;
  }

  SmallVector<ReductionKind> getReductionLoopIteratorKinds(Operation *) const {
    return {ReductionKind::Sum};
  }

  SmallVector<WholeLoop> getWholeLoops(Operation *op) const {
    return {{0, kTimeWhy},
            {unsigned(rankOf(op->getResult(0))), "the neuron sums over the input's steps"}};
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    int64_t rank = rankOf(op->getResult(0)), loops = rank + 1;
    MLIRContext *ctx = op->getContext();
    AffineExpr time = getAffineDimExpr(0, ctx), source = getAffineDimExpr(rank, ctx);
    SmallVector<AffineExpr> result = leadingDims(rank, ctx), input = result;
    input.front() = source;
    auto paramMap = [&](Value param) {
      int64_t paramRank = rankOf(param);
      SmallVector<AffineExpr> dims = {time, source};
      if (paramRank == 1)
        dims = {source};
      dims.resize(paramRank);
      return AffineMap::get(loops, 0, dims, ctx);
    };
    auto neuron = cast<ParallelNeuronOp>(op);
    return {AffineMap::get(loops, 0, input, ctx), paramMap(neuron.getWeight()),
            paramMap(neuron.getBias()), AffineMap::get(loops, 0, result, ctx)};
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

} // namespace

void registerTimeMajorShardingModels(MLIRContext *ctx) {
  LinearOp::attachInterface<LinearModel>(*ctx);
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
  NeuronOp::attachInterface<DescribedNeuronModel>(*ctx);
  RecurrentNeuronOp::attachInterface<RecurrentNeuronModel>(*ctx);
  ParallelNeuronOp::attachInterface<ParallelNeuronModel>(*ctx);
}

} // namespace snn::sharding
