#include "snn/Support/AttributeJSON.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace snn {

llvm::json::Value attributeToJSON(Attribute attr) {
  if (auto dict = dyn_cast<DictionaryAttr>(attr)) {
    llvm::json::Object object;
    for (NamedAttribute field : dict)
      object[field.getName().str()] = attributeToJSON(field.getValue());
    return object;
  }
  if (auto array = dyn_cast<ArrayAttr>(attr)) {
    llvm::json::Array values;
    for (Attribute value : array)
      values.push_back(attributeToJSON(value));
    return values;
  }
  if (auto flag = dyn_cast<BoolAttr>(attr))
    return flag.getValue();
  if (auto integer = dyn_cast<IntegerAttr>(attr))
    return integer.getInt();
  if (auto real = dyn_cast<FloatAttr>(attr))
    return real.getValueAsDouble();
  if (auto text = dyn_cast<StringAttr>(attr))
    return text.str();
  return nullptr;
}

} // namespace snn
