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

#include <string>
#include <vector>

namespace snn {

/// Module attributes the planning passes attach (later passes and the exporter read them).
constexpr llvm::StringLiteral kAnalysisAttrName = "snn.analysis";
constexpr llvm::StringLiteral kPlanAttrName = "snn.plan";
/// Per-op logical pipeline stage (pp plans).
constexpr llvm::StringLiteral kStageAttrName = "snn.pp_stage";

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

/// {memory_module_names, tensor_parallel_candidate_names, unsupported_tensor_parallel_names,
///  notes, roots, experimental_conv_tp}: the reference's field names.
mlir::DictionaryAttr analysisToAttribute(mlir::MLIRContext *context,
                                         const ModelAnalysis &analysis);

/// The roots and conv-TP flag a stored analysis was made with.
struct AnalysisOptions {
  std::vector<std::string> roots;
  bool experimentalConvTP = false;
};
AnalysisOptions storedAnalysisOptions(mlir::DictionaryAttr analysis);

} // namespace snn

#endif
