//===- PlannerBridge.h - snn IR -> the planner's plain structs ----*- C++ -*-===//
//
// The cost model has no MLIR in its API; this converts @main into its ModelInfo (ops in
// program order, shapes with the batch dimension marked, parameter sizes, dataflow) and
// remembers which op each index stands for, so the plan comes back onto the IR.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_DIALECT_SNN_TRANSFORMS_PLANNERBRIDGE_H
#define SNN_DIALECT_SNN_TRANSFORMS_PLANNERBRIDGE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include "snn/Dialect/SNN/Transforms/ModelAnalysis.h"
#include "snn/Planner/PlanRequest.h"

#include <vector>

namespace snn {

struct BridgedModel {
  mlir::func::FuncOp main;
  std::vector<mlir::Operation *> ops; ///< ModelInfo op index -> op
  planner::PlannerInput input;         ///< input.structure is always set
};

/// Fails (with a diagnostic) only when the module has no @main. A model whose sizes
/// cannot be counted (a dynamic dimension other than the batch, an op left from import)
/// keeps its structure but no `input.model`: the reference table decides then.
mlir::FailureOr<BridgedModel> bridgeModel(mlir::ModuleOp module, const ModelAnalysis &analysis);

} // namespace snn

#endif
