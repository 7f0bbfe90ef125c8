#ifndef SNN_DIALECT_SNN_TRANSFORMS_PASSES_H
#define SNN_DIALECT_SNN_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

#include "snn/Dialect/SNN/IR/SNNDialect.h"
#include "snn/Support/MirroredOptions.h"
#include "snn/Support/SchemaEnumParser.h"

namespace snn {

#define GEN_PASS_DECL
#include "snn/Dialect/SNN/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "snn/Dialect/SNN/Transforms/Passes.h.inc"

/// Adds what a planned module needs before export: --snn-partition, then
/// --snn-insert-backward-collectives (both no-ops unless the plan is tp or fsdp_tp), then
/// --snn-split-pipeline-stages (a no-op unless the plan is pp).
void buildPartitionPipeline(mlir::OpPassManager &pm);

/// The command-line options of a pass made by createAnalyzeModel() / createPlanParallelism(),
/// by name, so a tool can offer them as flags of its own that set this very pass
/// (snn-compile, through MirroredOptions): they are declared once, in Passes.td.
const snn::CommandLineOptions &analyzeModelOptions(mlir::Pass &pass);
const snn::CommandLineOptions &planParallelismOptions(mlir::Pass &pass);

} // namespace snn

#endif
