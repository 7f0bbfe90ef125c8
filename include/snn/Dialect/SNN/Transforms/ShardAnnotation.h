//===- ShardAnnotation.h - A plan's shardings on the IR -----------*- C++ -*-===//
#ifndef SNN_DIALECT_SNN_TRANSFORMS_SHARDANNOTATION_H
#define SNN_DIALECT_SNN_TRANSFORMS_SHARDANNOTATION_H

#include "mlir/IR/BuiltinOps.h"

#include "snn/Dialect/SNN/Transforms/PlannerBridge.h"
#include "snn/Planner/Plan.h"

namespace snn {

/// Name of the `shard.grid` a plan creates.
constexpr llvm::StringLiteral kGridName = "mesh";

/// Puts `plan` onto the IR: a `shard.grid @mesh` with the plan's mesh and, per mode,
///   dp / zero  activations split on the batch dimension over dp, parameters replicated;
///   fsdp       as dp, and parameters split on dimension 0 over dp;
///   tp         Megatron pairs: colwise weights split on dim 0, rowwise on dim 1, the
///              activations between them (neuron state included) on their feature dim;
///   fsdp_tp    both;
///   pp         a `snn.pp_stage` attribute on every op and parameter.
/// Mode none adds nothing. Notes about what could not be split go to `plan.notes`.
mlir::LogicalResult annotatePlan(mlir::ModuleOp module, const BridgedModel &bridged,
                                 planner::Plan &plan);

} // namespace snn

#endif
