//===- CommunicationEstimate.h - Collectives of a partitioned step -*- C++ -*-===//
//
// What one rank sends per training step in the collectives of a partitioned program, counted
// on the program itself (not estimated from the model like the planner's candidates):
//   snn.all_reduce            forward: 1 all_reduce of its result
//   snn.all_gather            forward: 1 all_gather of its result
//   snn.all_slice             backward: 1 all_gather of its input (the gathered gradient),
//                             when the input requires a gradient and is not an
//                             snn.parameter (the artifact stores a sliced parameter's parts
//                             as the ranks' own parameters: no collective runs)
//   snn.backward_all_reduce   backward: 1 all_reduce of its value, when it requires a gradient
// Bytes are float32 elements; the dynamic batch dimension is the per-rank batch, the plan's
// batch_size over the dp size (1 without a dp axis). The manifest's plan.communication,
// `snn-compile --explain` and `--explain-json` all print this.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_DIALECT_SNN_TRANSFORMS_COMMUNICATIONESTIMATE_H
#define SNN_DIALECT_SNN_TRANSFORMS_COMMUNICATIONESTIMATE_H

#include "mlir/IR/BuiltinOps.h"

#include "snn/Dialect/SNN/IR/SNNOps.h"
#include "snn/Schema/Manifest.h"

#include <vector>

namespace snn {

/// One entry per (kind, mesh axis) with calls, sorted by kind then axis; empty when the
/// module's plan is not partitioned.
std::vector<schema::CommunicationVolume> estimateCommunication(mlir::ModuleOp module);

/// The per-rank batch the estimate counts with: the plan's batch size over its dp size.
int64_t perRankBatch(PlanAttr plan);

/// The schema's plan (toPlanSpec) with `communication` filled from `module`: what the manifest
/// and --explain-json write.
schema::PlanSpec planSpecWithCommunication(mlir::ModuleOp module, PlanAttr plan);

} // namespace snn

#endif
