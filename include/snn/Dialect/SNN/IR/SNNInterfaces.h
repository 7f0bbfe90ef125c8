#ifndef SNN_DIALECT_SNN_IR_SNNINTERFACES_H
#define SNN_DIALECT_SNN_IR_SNNINTERFACES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"

namespace snn {
/// Marks ops that apply the same per-step computation to every time step of a [T, N, ...]
/// tensor: partitioning may split T or N freely across them.
template <typename ConcreteType>
class TimeDistributed
    : public mlir::OpTrait::TraitBase<ConcreteType, TimeDistributed> {};
} // namespace snn

#include "snn/Dialect/SNN/IR/SNNInterfaces.h.inc"

#endif
