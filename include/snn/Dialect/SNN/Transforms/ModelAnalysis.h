//===- ModelAnalysis.h - Neurons, TP candidates and roots ----------*- C++ -*-===//
//
// What --snn-analyze finds, shared with --snn-plan (which re-derives it from the roots the
// stored analysis records, so the two never disagree about which op is which).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_DIALECT_SNN_TRANSFORMS_MODELANALYSIS_H
#define SNN_DIALECT_SNN_TRANSFORMS_MODELANALYSIS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

#include "snn/Dialect/SNN/IR/SNNOps.h"

#include <string>
#include <vector>

namespace snn {

/// The op's source module path (its NameLoc), or "" when it has none.
std::string sourceName(mlir::Operation *op);
/// The module path, or "<unnamed snn.linear>" for display.
std::string displayName(mlir::Operation *op);

/// Model ops in program order: snn ops other than parameters and leftover ONNX nodes.
std::vector<mlir::Operation *> modelOps(mlir::ModuleOp module);

struct ModelAnalysis {
  std::vector<std::string> roots; ///< empty: the whole model
  bool experimentalConvTP = false;
  std::vector<mlir::Operation *> memoryModules; ///< stateful neurons, whole model
  std::vector<mlir::Operation *> tpCandidates;  ///< under the roots
  std::vector<mlir::Operation *> unsupported;   ///< under the roots, cannot be split
  std::vector<std::string> notes;

  bool isCandidate(mlir::Operation *op) const;
};

/// Runs the analysis; an empty or unknown root is an error diagnostic on the module.
mlir::FailureOr<ModelAnalysis> analyzeModel(mlir::ModuleOp module,
                                            llvm::ArrayRef<std::string> roots,
                                            bool experimentalConvTP);

/// The analysis as `#snn.analysis` (the reference's field names: memory_module_names,
/// tensor_parallel_candidate_names, unsupported_tensor_parallel_names, notes, roots,
/// experimental_conv_tp).
AnalysisAttr analysisToAttribute(mlir::MLIRContext *context, const ModelAnalysis &analysis);

/// The analysis as JSON with the same field names (--analysis-json, --explain-json).
llvm::json::Value analysisToJSON(AnalysisAttr analysis);

/// The roots and conv-TP flag a stored analysis was made with.
struct AnalysisOptions {
  std::vector<std::string> roots;
  bool experimentalConvTP = false;
};
AnalysisOptions storedAnalysisOptions(AnalysisAttr analysis);

} // namespace snn

#endif
