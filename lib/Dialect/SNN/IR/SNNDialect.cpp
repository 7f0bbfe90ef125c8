#include "snn/Dialect/SNN/IR/SNNDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include "snn/Dialect/SNN/IR/SNNOps.h"

using namespace mlir;
using namespace snn;

#include "snn/Dialect/SNN/IR/SNNDialect.cpp.inc"
#include "snn/Dialect/SNN/IR/SNNEnums.cpp.inc"
#include "snn/Dialect/SNN/IR/SNNInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "snn/Dialect/SNN/IR/SNNAttrs.cpp.inc"

void SNNDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "snn/Dialect/SNN/IR/SNNOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "snn/Dialect/SNN/IR/SNNAttrs.cpp.inc"
      >();
}
