//===- PlanSchema.h - #snn.plan as the schema's plan ------------*- C++ -*-===//
//
// The one conversion from the IR's plan attribute to the structs compiler and
// runtime share (snn/Schema/Manifest.h): the exporter writes them into the
// manifest and --explain-json prints them, so both say the same thing.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_DIALECT_SNN_IR_PLANSCHEMA_H
#define SNN_DIALECT_SNN_IR_PLANSCHEMA_H

#include "snn/Dialect/SNN/IR/SNNOps.h"
#include "snn/Schema/Manifest.h"

namespace snn {

schema::PlanSpec toPlanSpec(PlanAttr plan);
schema::MeshSpec toMeshSpec(PlanAttr plan);
schema::PlanExplanation toPlanExplanation(PlanAttr plan);

/// The strings of an ArrayAttr of StringAttr (other elements are skipped).
std::vector<std::string> stringList(mlir::ArrayAttr array);

} // namespace snn

#endif // SNN_DIALECT_SNN_IR_PLANSCHEMA_H
