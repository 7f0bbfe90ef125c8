//===- ShardAPI.h - The one wrapper around MLIR's upstream shard dialect -*- C++ -*-===//
//
// The upstream `shard` dialect (formerly `mesh`) changed its names and builders in LLVM 20
// and 22. Everything SpikeMesh does with it goes through these functions, so the next
// change is one file (lib/Support/ShardAPI.cpp). No upstream shard type appears here.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_SUPPORT_SHARDAPI_H
#define SNN_SUPPORT_SHARDAPI_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

namespace snn::shardapi {

/// For each tensor dimension, the mesh axes it is split along (major to minor); a
/// dimension with no axes is replicated. Trailing replicated dimensions may be omitted.
using SplitAxes = llvm::SmallVector<llvm::SmallVector<int16_t, 2>, 4>;

void registerShardDialect(mlir::DialectRegistry &registry);
/// Registers upstream's `--sharding-propagation` and `--shard-partition` (for snn-opt).
void registerShardPasses();

/// Inserts `shard.grid @name(shape = ...)` at the builder's insertion point.
void createGrid(mlir::OpBuilder &builder, mlir::Location loc, llvm::StringRef name,
                llvm::ArrayRef<int64_t> shape);

/// A `shard.sharding` value for `grid` with `axes` (an empty SplitAxes is replicated).
mlir::Value createSharding(mlir::OpBuilder &builder, mlir::Location loc, llvm::StringRef grid,
                           const SplitAxes &axes);

/// Annotates `value` with `sharding` (`shard.shard`) and returns the annotated value.
mlir::Value annotate(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value value,
                     mlir::Value sharding);

/// True for any op of the shard dialect (grids, shardings, annotations, collectives).
bool isShardOp(mlir::Operation *op);
/// True for the ops a plan puts on the IR (`shard.grid`, `shard.sharding`, `shard.shard`);
/// false for what a partitioned program holds besides (collectives, process indices).
bool isPlanAnnotationOp(mlir::Operation *op);
/// The value a `shard.shard` annotation forwards; null for every other op.
mlir::Value annotatedSource(mlir::Operation *op);
/// The split axes of the sharding a `shard.shard` annotation applies; empty otherwise.
SplitAxes annotationAxes(mlir::Operation *op);

} // namespace snn::shardapi

#endif
