//===- DeclaredTypes.cpp - The model's declared shapes against the ops' ---===//
#include "DeclaredTypes.h"
#include "ONNXNodeReader.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace snn::legalize {

namespace {

std::string typesText(TypeRange types) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(types, os);
  return text;
}

/// The types `op` infers from its operands, or nullopt when inference itself fails (the
/// verifier then reports that failure, which names its cause).
std::optional<SmallVector<Type>> inferredTypes(InferTypeOpInterface op) {
  SmallVector<Type> types;
  ScopedDiagnosticHandler silence(op->getContext(), [](Diagnostic &) { return success(); });
  if (failed(op.inferReturnTypes(op->getContext(), op->getLoc(), op->getOperands(),
                                 op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
                                 op->getRegions(), types)))
    return std::nullopt;
  return types;
}

} // namespace

bool reportDeclaredTypeConflicts(func::FuncOp func) {
  bool any = false;
  func.walk([&](InferTypeOpInterface op) {
    std::optional<SmallVector<Type>> inferred = inferredTypes(op);
    if (!inferred || op.isCompatibleReturnTypes(*inferred, op->getResultTypes()))
      return;
    any = true;
    op->emitError(llvm::formatv(
        "ONNX node '{0}': '{1}' computes {2} from its inputs, but the model declares {3} for "
        "its output (the graph's inputs, outputs and value_info must agree on every shape, "
        "the batch dimension included)",
        nodeName(op), op->getName().getStringRef(), typesText(*inferred),
        typesText(op->getResultTypes())));
  });
  return any;
}

} // namespace snn::legalize
