#ifndef SNN_DIALECT_SNN_TRANSFORMS_PASSES_H
#define SNN_DIALECT_SNN_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

#include "snn/Dialect/SNN/IR/SNNDialect.h"

namespace snn {

#define GEN_PASS_DECL
#include "snn/Dialect/SNN/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "snn/Dialect/SNN/Transforms/Passes.h.inc"

/// Adds the passes that turn a freshly imported ONNX module into legal snn IR.
void buildImportPipeline(mlir::OpPassManager &pm);

/// Adds --snn-analyze then --snn-plan (what snn-compile runs when asked to plan).
void buildPlanningPipeline(mlir::OpPassManager &pm, const AnalyzeModelOptions &analyze,
                           const PlanParallelismOptions &plan);

} // namespace snn

#endif
