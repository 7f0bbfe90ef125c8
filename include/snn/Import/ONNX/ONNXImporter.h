#ifndef SNN_IMPORT_ONNX_ONNXIMPORTER_H
#define SNN_IMPORT_ONNX_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

namespace snn {

/// Reads an ONNX model file and imports it generically: one `func.func @main` whose arguments
/// are the graph inputs, float initializers become `snn.parameter`, integer initializers
/// `arith.constant`, and every node an `snn.onnx_node` located at its node name.
/// Emits a diagnostic naming the file (and the node, where one is at fault) and returns null on
/// failure.
mlir::OwningOpRef<mlir::ModuleOp> importONNXFile(mlir::MLIRContext *context,
                                                 llvm::StringRef path);

/// The same for a serialized model already in memory; `name` stands for the file in
/// diagnostics.
mlir::OwningOpRef<mlir::ModuleOp> importONNXBuffer(mlir::MLIRContext *context,
                                                   llvm::StringRef bytes, llvm::StringRef name);

} // namespace snn

#endif
