#ifndef SNN_SUPPORT_ATTRIBUTEJSON_H
#define SNN_SUPPORT_ATTRIBUTEJSON_H

#include "mlir/IR/Attributes.h"
#include "llvm/Support/JSON.h"

namespace snn {

/// Any attribute as JSON: dictionaries, arrays, strings, integers, floats and booleans;
/// null for anything else. Used for --explain-json, analysis JSON and the artifact manifest.
llvm::json::Value attributeToJSON(mlir::Attribute attr);

} // namespace snn

#endif
