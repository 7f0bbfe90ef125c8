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
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <memory>
#include <optional>

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

/// Annotates `value` with `sharding` (`shard.shard`) and returns the annotated value; with
/// `forUsers`, the sharding its users take (`annotate_for_users`).
mlir::Value annotate(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value value,
                     mlir::Value sharding, bool forUsers = false);

/// True for any op of the shard dialect (grids, shardings, annotations, collectives).
bool isShardOp(mlir::Operation *op);
/// True for the ops a plan puts on the IR (`shard.grid`, `shard.sharding`, `shard.shard`);
/// false for what a partitioned program holds besides (collectives, process indices).
bool isPlanAnnotationOp(mlir::Operation *op);
/// The value a `shard.shard` annotation forwards; null for every other op.
mlir::Value annotatedSource(mlir::Operation *op);
/// The split axes of the sharding a `shard.shard` annotation applies; empty otherwise.
SplitAxes annotationAxes(mlir::Operation *op);

/// Keeps, in every `shard.sharding` under `root`, only the splits over grid axis `axis`: a
/// dimension split over other axes only becomes whole. Fails, with an error on the sharding,
/// for one with halo sizes or sharded-dimension offsets, which such a projection would make
/// meaningless (no plan creates them).
mlir::LogicalResult keepOnlyGridAxis(mlir::Operation *root, int16_t axis);

/// Upstream's `--sharding-propagation` (forward first, as the planner places a split: an
/// unpaired colwise layer's output is gathered after its neuron) and `--shard-partition`, to
/// run on a function.
std::unique_ptr<mlir::Pass> createShardingPropagationPass();
std::unique_ptr<mlir::Pass> createPartitionPass();

/// Whether `block` is annotated as upstream's partition needs it (it asserts, or crashes,
/// otherwise): every ranked tensor of rank > 0 that is a block argument has exactly one use,
/// a `shard.shard`; every such operand of an op (other than shard ops and constants) comes
/// from a `shard.shard ... annotate_for_users` (the terminator's from any); every result has exactly one use, a
/// `shard.shard` without it. The first violation is an error on its op naming the value.
mlir::LogicalResult checkFullyAnnotated(mlir::Block &block);

/// A shard collective, as SpikeMesh reads one; no upstream type.
enum class CollectiveKind { AllReduce, AllGather, AllSlice };
struct Collective {
  CollectiveKind kind;
  llvm::SmallVector<int16_t, 2> gridAxes;
  /// all_gather's gather_axis, all_slice's slice_axis; -1 for all_reduce.
  int64_t axis = -1;
  /// all_reduce: whether its reduction is a sum (the only one snn.all_reduce computes).
  bool sum = true;
};
/// `op` as a Collective; nullopt for any other op (other shard ops included).
std::optional<Collective> readCollective(mlir::Operation *op);

/// Replaces every `shard.shard` under `root` by the value it annotates, then erases the
/// unused `shard.sharding` ops and every `shard.grid` no op refers to any more.
void eraseAnnotations(mlir::Operation *root);

} // namespace snn::shardapi

#endif
