#ifndef SNN_EXPORT_ARTIFACTEXPORTER_H
#define SNN_EXPORT_ARTIFACTEXPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

namespace snn {

/// Writes the legal snn IR in `module` as a runtime artifact directory (manifest.json plus one
/// ONNX program per distinct rank program; see docs/artifact-format.md). The directory is built
/// beside `directory` and renamed into place, so a failure leaves no partial output.
mlir::LogicalResult exportArtifact(mlir::ModuleOp module, llvm::StringRef directory);

} // namespace snn

#endif
