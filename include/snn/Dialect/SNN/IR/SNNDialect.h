#ifndef SNN_DIALECT_SNN_IR_SNNDIALECT_H
#define SNN_DIALECT_SNN_IR_SNNDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dialect.h"

#include "snn/Dialect/SNN/IR/SNNDialect.h.inc"

#endif
