//===- PartitionedValues.cpp - What a per-rank program's values are -------===//
#include "snn/Dialect/SNN/Transforms/PartitionedValues.h"

#include "llvm/ADT/STLExtras.h"

#include "snn/Dialect/SNN/IR/SNNOps.h"

using namespace mlir;

namespace snn {

PartitionedValues::PartitionedValues(func::FuncOp func) {
  if (func.getBody().empty())
    return;
  for (Operation &op : func.getBody().front())
    visit(op);
}

void PartitionedValues::visit(Operation &op) {
  SmallVector<StringRef, 1> axes;
  bool needsGrad = false;
  if (auto param = dyn_cast<ParameterOp>(op))
    needsGrad = !param.getBuffer();
  for (Value operand : op.getOperands()) {
    for (StringRef axis : varyingAxes(operand))
      if (!llvm::is_contained(axes, axis))
        axes.push_back(axis);
    needsGrad |= requiresGrad(operand);
  }
  // A slice makes its axis vary; a sum or a concatenation over the axis makes it whole.
  if (auto slice = dyn_cast<AllSliceOp>(op)) {
    if (!llvm::is_contained(axes, slice.getMeshAxis()))
      axes.push_back(slice.getMeshAxis());
  } else if (auto reduce = dyn_cast<AllReduceOp>(op)) {
    llvm::erase(axes, reduce.getMeshAxis());
  } else if (auto gather = dyn_cast<AllGatherOp>(op)) {
    llvm::erase(axes, gather.getMeshAxis());
  }
  llvm::sort(axes);
  for (Value result : op.getResults()) {
    if (!axes.empty())
      varying[result] = axes;
    if (needsGrad)
      grad.insert(result);
  }
}

ArrayRef<StringRef> PartitionedValues::varyingAxes(Value value) const {
  auto it = varying.find(value);
  if (it == varying.end())
    return {};
  return it->second;
}

bool PartitionedValues::variesOver(Value value, StringRef axis) const {
  return llvm::is_contained(varyingAxes(value), axis);
}

} // namespace snn
