#ifndef SNN_DIALECT_SNN_IR_SNNDIALECT_H
#define SNN_DIALECT_SNN_IR_SNNDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dialect.h"

#include "snn/Dialect/SNN/IR/SNNDialect.h.inc"

namespace snn {
/// Module attributes the planning passes attach (later passes and the exporter read them):
/// `#snn.analysis` and `#snn.plan`.
constexpr llvm::StringLiteral kAnalysisAttrName = "snn.analysis";
constexpr llvm::StringLiteral kPlanAttrName = "snn.plan";
/// Module attribute (unit) the importer sets from the ONNX metadata
/// `spikemesh.input_repeated_over_time`: the PyTorch model repeats its static [N, ...] input
/// over T in its forward; the exporter writes it as the manifest input's `repeated_over_time`.
constexpr llvm::StringLiteral kInputRepeatedOverTimeAttrName = "snn.input_repeated_over_time";
/// Per-op logical pipeline stage (pp plans).
constexpr llvm::StringLiteral kStageAttrName = "snn.pp_stage";
} // namespace snn

#endif
