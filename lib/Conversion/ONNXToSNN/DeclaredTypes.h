//===- DeclaredTypes.h - The model's declared shapes against the ops' -*- C++ -*-===//
//
// Private to SNNConversionONNXToSNN. The importer gives values the types the model declares
// (graph inputs, outputs, value_info); the legalized snn ops infer their own. Where the two
// disagree, MLIR's verifier would only say "inferred type(s) ... are incompatible with return
// type(s)"; this check says which node and which declared shape instead.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_LIB_CONVERSION_ONNXTOSNN_DECLAREDTYPES_H
#define SNN_LIB_CONVERSION_ONNXTOSNN_DECLAREDTYPES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace snn::legalize {

/// Emits one error per legalized op of `func` whose result type is not the one it infers
/// from its operands (a declared shape at odds with the computed one), naming the ONNX node
/// and both types. Returns whether it emitted any.
bool reportDeclaredTypeConflicts(mlir::func::FuncOp func);

} // namespace snn::legalize

#endif // SNN_LIB_CONVERSION_ONNXTOSNN_DECLAREDTYPES_H
