//===- InsertBackwardCollectives.cpp - --snn-insert-backward-collectives --===//
//
// In a partitioned program, a replicated value that a rank-varying computation reads (the
// input of a column-split layer, a ParametricLIF's `w` read by split activations) gets, on
// each rank, only the gradient of that rank's part: the gradient of the whole is the sum over
// the axis. Autograd on one rank cannot know that; `snn.backward_all_reduce` (the `f` of a
// Megatron pair) tells the runtime. Without it, an earlier layer would train on a partial
// gradient, and the replicas of a parameter such as PLIF's `w` would get different updates
// and drift apart (the reference package's defect).
//
//===----------------------------------------------------------------------===//
#include "snn/Dialect/SNN/Transforms/Passes.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"

#include "snn/Dialect/SNN/IR/SNNOps.h"
#include "snn/Dialect/SNN/Transforms/PartitionedValues.h"

namespace snn {
#define GEN_PASS_DEF_INSERTBACKWARDCOLLECTIVES
#include "snn/Dialect/SNN/Transforms/Passes.h.inc"
} // namespace snn

using namespace mlir;

namespace {

/// The uses of one value that need its gradient summed over the same mesh axes (the axes
/// joined by commas, interned so the pair can key a map).
using UseGroups = llvm::MapVector<std::pair<Value, StringAttr>, SmallVector<OpOperand *>>;

/// The mesh axes whose gradient sum `value` already carries (a chain of
/// snn.backward_all_reduce ops), so a second run inserts nothing.
SmallVector<StringRef> reducedAxes(Value value) {
  SmallVector<StringRef> axes;
  while (auto reduce = value.getDefiningOp<snn::BackwardAllReduceOp>()) {
    axes.push_back(reduce.getMeshAxis());
    value = reduce.getInput();
  }
  return axes;
}

/// The axes over which `user`'s result varies while `value`, which `user` reads, does not
/// (and has not had its gradient summed over yet); sorted.
SmallVector<StringRef> missingAxes(const snn::PartitionedValues &values, Operation *user,
                                   Value value) {
  SmallVector<StringRef> done = reducedAxes(value), axes;
  for (Value result : user->getResults())
    for (StringRef axis : values.varyingAxes(result))
      if (!values.variesOver(value, axis) && !llvm::is_contained(done, axis) &&
          !llvm::is_contained(axes, axis))
        axes.push_back(axis);
  llvm::sort(axes);
  return axes;
}

/// Every use that needs a backward all-reduce, grouped by value and axes, in program order.
UseGroups collectUses(func::FuncOp main, const snn::PartitionedValues &values) {
  UseGroups groups;
  for (Operation &op : main.getBody().front()) {
    // all_slice's own backward gathers the parts: its input's gradient is already whole.
    if (isa<snn::AllSliceOp>(op))
      continue;
    for (OpOperand &operand : op.getOpOperands()) {
      if (!values.requiresGrad(operand.get()))
        continue;
      SmallVector<StringRef> axes = missingAxes(values, &op, operand.get());
      if (!axes.empty())
        groups[{operand.get(), StringAttr::get(op.getContext(), llvm::join(axes, ","))}]
            .push_back(&operand);
    }
  }
  return groups;
}

/// One snn.backward_all_reduce per axis, chained, right after `value`'s definition.
Value reduceOver(Value value, StringRef axes) {
  OpBuilder builder(value.getContext());
  builder.setInsertionPointAfterValue(value);
  SmallVector<StringRef> names;
  llvm::SplitString(axes, names, ",");
  for (StringRef axis : names)
    value = snn::BackwardAllReduceOp::create(builder, value.getLoc(), value.getType(), value,
                                             axis);
  return value;
}

class BackwardCollectiveInserter
    : public snn::impl::InsertBackwardCollectivesBase<BackwardCollectiveInserter> {
public:
  using InsertBackwardCollectivesBase::InsertBackwardCollectivesBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto plan = module->getAttrOfType<snn::PlanAttr>(snn::kPlanAttrName);
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!plan || !plan.getPartitioned() || !main || main.getBody().empty())
      return;
    snn::PartitionedValues values(main);
    for (auto &[key, uses] : collectUses(main, values)) {
      Value reduced = reduceOver(key.first, key.second.getValue());
      for (OpOperand *use : uses)
        use->set(reduced);
    }
  }
};

} // namespace
