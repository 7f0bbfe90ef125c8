//===- ShardingInterfaceImpl.h - snn ops as upstream ShardingInterface --*- C++ -*-===//
//
// External models of MLIR's upstream `shard::ShardingInterface` for the snn ops, so a plan's
// annotations propagate with `--sharding-propagation` and `--shard-partition` can turn an
// annotated function into its per-rank (SPMD) form. No upstream shard type appears here.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_DIALECT_SNN_INTERFACES_SHARDINGINTERFACEIMPL_H
#define SNN_DIALECT_SNN_INTERFACES_SHARDINGINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace snn {

/// Attaches the models to the snn ops when the snn dialect is loaded (and the upstream model
/// of `func.return`); loads the dialects their `partition` methods create ops of.
///   neurons, dropout, add, mul  every dim parallel;
///   linear                      [T, N, ...] and `out` parallel, `in` a sum reduction
///                               (a split `in` leaves partial sums: all-reduce);
///   conv2d                      T, N, O parallel, C a sum reduction (as linear);
///   pools                       T, N, C parallel;
///   batch_norm                  C parallel (its statistics reduce over the rest);
///   mean_time                   dim 0 a reduction over time;
///   flatten                     T, N and the first flattened dim;
///   parameter                   every dim (a split parameter is sliced locally).
/// Dimension 0 (T) of a time-major tensor is never split, nor are spatial dims.
void registerShardingInterfaceModels(mlir::DialectRegistry &registry);

} // namespace snn

#endif
