//===- ONNXToSNN.h - Imported ONNX nodes -> snn ops -------------*- C++ -*-===//
//
// --snn-legalize-onnx (include/snn/Conversion/Passes.td) rewrites the generic
// `snn.onnx_node` ops the importer writes into snn ops; the import pipeline runs it and
// cleans up after it.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_CONVERSION_ONNXTOSNN_ONNXTOSNN_H
#define SNN_CONVERSION_ONNXTOSNN_ONNXTOSNN_H

#include "mlir/Pass/Pass.h"

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace snn {

#define GEN_PASS_DECL_LEGALIZEONNX
#include "snn/Conversion/Passes.h.inc"

/// Adds the passes that turn a freshly imported ONNX module into legal snn IR.
void buildImportPipeline(mlir::OpPassManager &pm);

} // namespace snn

#endif // SNN_CONVERSION_ONNXTOSNN_ONNXTOSNN_H
