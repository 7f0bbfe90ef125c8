//===- ImportModel.h - A model file of either format as snn IR --*- C++ -*-===//
//
// The compiler's front door: a NIR file (HDF5, recognised by its signature, whatever its
// name) goes through the NIR importer, anything else through the ONNX importer and is
// legalized by the import pipeline.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_IMPORT_MODEL_IMPORTMODEL_H
#define SNN_IMPORT_MODEL_IMPORTMODEL_H

#include "snn/Import/NIR/NIRImporter.h"

namespace snn {

/// Imports `path` as NIR or ONNX by its content; `nir` applies to a NIR file only. Emits a
/// diagnostic and returns null on failure.
mlir::OwningOpRef<mlir::ModuleOp> importModelFile(mlir::MLIRContext *context, llvm::StringRef path,
                                                  const NIRImportOptions &nir);

} // namespace snn

#endif // SNN_IMPORT_MODEL_IMPORTMODEL_H
