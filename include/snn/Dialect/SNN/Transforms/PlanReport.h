//===- PlanReport.h - The plan as attributes, text and JSON -------*- C++ -*-===//
#ifndef SNN_DIALECT_SNN_TRANSFORMS_PLANREPORT_H
#define SNN_DIALECT_SNN_TRANSFORMS_PLANREPORT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include "snn/Dialect/SNN/IR/SNNOps.h"
#include "snn/Dialect/SNN/Transforms/ModelAnalysis.h"
#include "snn/Dialect/SNN/Transforms/PlannerBridge.h"
#include "snn/Planner/Plan.h"
#include "snn/Planner/PlanRequest.h"

#include <functional>

#include "snn/Support/AttributeJSON.h"

namespace snn {

/// The plan as the `snn.plan` module attribute. Field names follow the reference package
/// (docs/reference-api.md: mode, optimizer_strategy, mesh_shape, tp_mesh_dim,
/// pp_microbatches, ..., rationale, notes); a mesh dim of -1 means the mesh has no such axis.
PlanAttr planToAttribute(mlir::MLIRContext *context, const planner::Plan &plan,
                                     const planner::PlanRequest &request,
                                     const ModelAnalysis &analysis, const BridgedModel &bridged);

/// The readable analysis summary (what --snn-analyze prints).
void printAnalysis(AnalysisAttr analysis, llvm::raw_ostream &os);
/// The analysis and the plan with its candidates and rationale (`snn-compile --explain`).
void printExplanation(mlir::ModuleOp module, llvm::raw_ostream &os);
/// {"analysis": ..., "plan": ...} from the module's attributes (`--explain-json`).
llvm::json::Value explanationJSON(mlir::ModuleOp module);

/// Writes to `path` ("-" is stdout); a failure is an error diagnostic at `loc`.
mlir::LogicalResult writeReport(llvm::StringRef path, mlir::Location loc,
                                const std::function<void(llvm::raw_ostream &)> &write);

} // namespace snn

#endif
