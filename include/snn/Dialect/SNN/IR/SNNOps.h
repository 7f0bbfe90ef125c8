#ifndef SNN_DIALECT_SNN_IR_SNNOPS_H
#define SNN_DIALECT_SNN_IR_SNNOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "snn/Dialect/SNN/IR/SNNAttributeParameters.h"
#include "snn/Dialect/SNN/IR/SNNDialect.h"
#include "snn/Dialect/SNN/IR/SNNEnums.h.inc"
#include "snn/Dialect/SNN/IR/SNNInterfaces.h"
#include "snn/Schema/NeuronProgram.h"

#define GET_ATTRDEF_CLASSES
#include "snn/Dialect/SNN/IR/SNNAttrs.h.inc"

#define GET_OP_CLASSES
#include "snn/Dialect/SNN/IR/SNNOps.h.inc"

#endif
