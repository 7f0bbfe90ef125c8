//===- NIRImporter.h - A NIR graph as snn IR --------------------*- C++ -*-===//
//
// A NIR file's graph as one `func.func @main` of snn ops: Input nodes become its arguments
// and Output nodes its results, [T, N, shape...] with the time steps T and a batch N added;
// edges become data flow (edges into one node add up); Affine/Linear become snn.linear,
// Conv2d snn.conv2d, SumPool2d an all-ones depthwise snn.conv2d, AvgPool2d snn.avg_pool2d,
// Flatten snn.flatten or snn.reshape, and the neuron primitives `snn.neuron` descriptions
// stepped by forward Euler (snn/NIR/NIRNeurons.h). The result is legal snn IR, ready
// for the import pipeline's canonicalization.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_IMPORT_NIR_NIRIMPORTER_H
#define SNN_IMPORT_NIR_NIRIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace snn {

struct NIRImportOptions {
  /// The time step, in the unit of the file's time constants (seconds for every library
  /// that writes NIR), that the continuous-time equations are stepped by. None: the graph
  /// must not need one (no neuron but Threshold).
  std::optional<double> dt;
  /// The number of time steps T of the function's inputs (> 0); 0 leaves T open.
  int64_t steps = 0;
};

/// Reads the NIR file `path` and imports its graph. Emits one diagnostic naming the file
/// (and the node, where one is at fault) and returns null on failure.
mlir::OwningOpRef<mlir::ModuleOp> importNIRFile(mlir::MLIRContext *context, llvm::StringRef path,
                                                const NIRImportOptions &options);

} // namespace snn

#endif // SNN_IMPORT_NIR_NIRIMPORTER_H
