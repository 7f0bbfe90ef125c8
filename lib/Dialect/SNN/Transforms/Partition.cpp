//===- Partition.cpp - --snn-partition ------------------------------------===//
//
// A tp or fsdp_tp plan's annotated @main -> the program one rank runs, partitioned over the
// plan's tp mesh axis only. The dp part of a plan (the batch split, fsdp's parameter shards)
// stays with the runtime, which already runs it for dp and fsdp over the ranks that share a
// tp coordinate; partitioning it here too would make the program depend on the dp
// coordinate and duplicate what the runtime does. Upstream's propagation and partition do
// the splitting (the snn ops' models in lib/Dialect/SNN/Interfaces, TimeMajorShardingModels.cpp
// and LayoutShardingModels.cpp, say how each op splits); this pass frames them: it projects
// the plan's shardings onto the tp axis, refuses to partition an incompletely annotated
// function (upstream's partition would crash on it), and turns the result into snn ops the
// exporter and the runtime know.
//
//===----------------------------------------------------------------------===//
#include "snn/Dialect/SNN/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"

#include "snn/Dialect/SNN/IR/SNNOps.h"
#include "snn/Dialect/SNN/Transforms/PartitionedValues.h"
#include "snn/Support/ShardAPI.h"

namespace snn {
#define GEN_PASS_DEF_PARTITIONTENSORPARALLEL
#include "snn/Dialect/SNN/Transforms/Passes.h.inc"
} // namespace snn

using namespace mlir;
namespace schema = snn::schema;

namespace {

/// The plan's tp axis: its index on the grid and its name.
struct TPAxis {
  int16_t index;
  StringRef name;
};

FailureOr<TPAxis> tpAxisOf(ModuleOp module, snn::PlanAttr plan) {
  int64_t dim = plan.getTpMeshDim();
  ArrayAttr axes = plan.getMeshAxes();
  if (dim < 0 || dim >= int64_t(axes.size()) || !isa<StringAttr>(axes[dim]))
    return module.emitError("plan mode '")
           << schema::nameOf(plan.getMode()) << "' has no tp axis in its mesh (tp_mesh_dim "
           << dim << ")";
  return TPAxis{int16_t(dim), cast<StringAttr>(axes[dim]).getValue()};
}

/// `plan` with `partitioned = true`; every other field as it was.
snn::PlanAttr markPartitioned(snn::PlanAttr p) {
  return snn::PlanAttr::get(
      p.getContext(), p.getMode(), p.getObjective(), p.getOptimizerStrategy(), p.getTopology(),
      p.getWorldSize(), p.getBatchSize(), p.getMeshAxes(), p.getMeshShape(), p.getDpMeshDim(),
      p.getTpMeshDim(), p.getPpMeshDim(), p.getMemoptLevel(), p.getPpMicrobatches(),
      p.getPpSchedule(), p.getPpVirtualStages(), p.getPpLayout(), p.getPpMemoptStages(),
      p.getPpDelayWgrad(), p.getPpStageUnits(), p.getTensorParallelRoots(),
      p.getTensorParallelPairs(), p.getExperimentalConvTp(), p.getAllowPipeline(),
      p.getAllowZero(), p.getMemoryBudget(), p.getDecidedBy(), p.getRationale(), p.getNotes(),
      p.getCandidates(), p.getModel(), /*partitioned=*/true, p.getPredicted(), p.getTimes(),
      p.getOptimizerStates(), p.getPpStageCosts());
}

std::string gridAxesText(ArrayRef<int16_t> axes) {
  std::string text = "[";
  for (size_t i = 0; i < axes.size(); ++i)
    text += (i ? ", " : "") + std::to_string(axes[i]);
  return text + "]";
}

/// The snn collectives made so far, by input and what they compute ("<kind> <axis> <dim>"):
/// upstream's partition reshards a value once per use, and since every rank runs the same
/// program, one collective can serve every use of the same reshard.
using Collectives = llvm::DenseMap<std::pair<Value, StringAttr>, Value>;

/// `op`, a shard collective, as the snn collective over the named mesh axis (or an equal one
/// made before).
LogicalResult replaceCollective(Operation *op, const snn::shardapi::Collective &collective,
                                ArrayAttr meshAxes, Collectives &made) {
  using snn::shardapi::CollectiveKind;
  if (collective.gridAxes.size() != 1 || collective.gridAxes[0] >= int64_t(meshAxes.size()))
    return op->emitError("'")
           << op->getName() << "' over grid axes " << gridAxesText(collective.gridAxes)
           << " has no snn collective: each one runs over exactly one mesh axis";
  if (!collective.sum)
    return op->emitError("'") << op->getName() << "' is not a sum: snn.all_reduce only sums";
  StringRef axis = cast<StringAttr>(meshAxes[collective.gridAxes[0]]).getValue();
  Value input = op->getOperand(0);
  auto key = std::make_pair(
      input, StringAttr::get(op->getContext(), op->getName().stripDialect() + " " + axis +
                                                   " " + Twine(collective.axis)));
  Value &replacement = made[key];
  if (!replacement) {
    OpBuilder builder(op);
    Location loc = op->getLoc();
    Type type = op->getResult(0).getType();
    if (collective.kind == CollectiveKind::AllReduce)
      replacement = snn::AllReduceOp::create(builder, loc, type, input, axis);
    else if (collective.kind == CollectiveKind::AllGather)
      replacement = snn::AllGatherOp::create(builder, loc, type, input, axis, collective.axis);
    else
      replacement = snn::AllSliceOp::create(builder, loc, type, input, axis, collective.axis);
  }
  op->getResult(0).replaceAllUsesWith(replacement);
  op->erase();
  return success();
}

/// Leaves @main with snn ops only: shard collectives become snn ones (one per distinct
/// reshard of a value), a `tensor.cast` that
/// changes no type (partition adds them after a gather) is dropped, and any other shard op
/// (no snn counterpart, so no rank could run it) is an error naming it.
LogicalResult toSnnOps(func::FuncOp main, ArrayAttr meshAxes) {
  Collectives made;
  for (Operation &op : llvm::make_early_inc_range(main.getBody().front())) {
    if (std::optional<snn::shardapi::Collective> c = snn::shardapi::readCollective(&op)) {
      if (failed(replaceCollective(&op, *c, meshAxes, made)))
        return failure();
    } else if (auto cast = dyn_cast<tensor::CastOp>(op)) {
      if (cast.getSource().getType() != cast.getType())
        return cast.emitError("cannot drop 'tensor.cast' from ")
               << cast.getSource().getType() << " to " << cast.getType()
               << ": a partitioned program keeps its static shapes";
      cast.getResult().replaceAllUsesWith(cast.getSource());
      cast.erase();
    } else if (snn::shardapi::isShardOp(&op) && !snn::shardapi::isPlanAnnotationOp(&op)) {
      return op.emitError("'") << op.getName()
                               << "' has no snn counterpart: the partitioned program cannot "
                                  "hold it";
    }
  }
  return success();
}

/// What the runtime cannot run on a partitioned value: a dropout on a split value, and a
/// conv channel split that the plan did not allow (--experimental-conv-tp).
LogicalResult checkSplitOps(func::FuncOp main, snn::PlanAttr plan) {
  snn::PartitionedValues values(main);
  for (Operation &op : main.getBody().front()) {
    if (auto dropout = dyn_cast<snn::DropoutOp>(op)) {
      ArrayRef<StringRef> axes = values.varyingAxes(dropout.getInput());
      if (!axes.empty())
        return dropout.emitError("dropout on a tensor-parallel split value (split over mesh "
                                 "axis '")
               << axes.front()
               << "') is not supported: its parts would need independent masks, while "
                  "replicated values need the same mask on every rank";
    }
    auto conv = dyn_cast<snn::Conv2dOp>(op);
    if (!conv || plan.getExperimentalConvTp())
      continue;
    for (Value value : llvm::concat<Value>(conv->getOperands(), conv->getResults()))
      if (!values.varyingAxes(value).empty())
        return conv.emitError("conv2d channel split over mesh axis '")
               << values.varyingAxes(value).front()
               << "' needs experimental conv TP (plan with experimental-conv-tp)";
  }
  return success();
}

class TensorParallelPartitioner
    : public snn::impl::PartitionTensorParallelBase<TensorParallelPartitioner> {
public:
  using PartitionTensorParallelBase::PartitionTensorParallelBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    PartitionTensorParallelBase::getDependentDialects(registry);
    snn::shardapi::registerShardDialect(registry);
  }

  void runOnOperation() override;

private:
  LogicalResult partition(func::FuncOp main, int16_t tpIndex);
};

/// Upstream's propagation, the annotation check, upstream's partition.
LogicalResult TensorParallelPartitioner::partition(func::FuncOp main, int16_t tpIndex) {
  if (failed(snn::shardapi::keepOnlyGridAxis(getOperation(), tpIndex)))
    return failure();
  OpPassManager propagate(func::FuncOp::getOperationName());
  propagate.addPass(snn::shardapi::createShardingPropagationPass());
  if (failed(runPipeline(propagate, main)) ||
      failed(snn::shardapi::checkFullyAnnotated(main.getBody().front())))
    return failure();
  OpPassManager partitionPM(func::FuncOp::getOperationName());
  partitionPM.addPass(snn::shardapi::createPartitionPass());
  return runPipeline(partitionPM, main);
}

void TensorParallelPartitioner::runOnOperation() {
  ModuleOp module = getOperation();
  auto plan = module->getAttrOfType<snn::PlanAttr>(snn::kPlanAttrName);
  if (!plan || plan.getPartitioned() || !schema::partitionsOverTp(plan.getMode(),
                                                                   plan.getTpMeshDim() >= 0))
    return;
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main || main.getBody().empty()) {
    module.emitError("module has no @main function to partition");
    return signalPassFailure();
  }
  FailureOr<TPAxis> tp = tpAxisOf(module, plan);
  FunctionType whole = main.getFunctionType();
  if (failed(tp) || failed(partition(main, tp->index)) ||
      failed(toSnnOps(main, plan.getMeshAxes())))
    return signalPassFailure();
  // The runtime gives every rank the whole input and reads the whole output.
  if (main.getFunctionType() != whole) {
    main.emitError("the partition over mesh axis '")
        << tp->name << "' splits @main's input or output (" << whole << " became "
        << main.getFunctionType() << "): every rank takes the whole input and returns the "
        << "whole output";
    return signalPassFailure();
  }
  snn::shardapi::eraseAnnotations(module);
  if (failed(checkSplitOps(main, plan)))
    return signalPassFailure();
  module->setAttr(snn::kPlanAttrName, markPartitioned(plan));
}

} // namespace
