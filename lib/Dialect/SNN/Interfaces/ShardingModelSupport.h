//===- ShardingModelSupport.h - What the snn ShardingInterface models share -*- C++ -*-===//
//
// The pieces the external models of upstream's `shard::ShardingInterface` for snn ops share
// across ShardingInterfaceImpl.cpp, TimeMajorShardingModels.cpp and LayoutShardingModels.cpp:
// the loops an op keeps whole and why, the checks before `partition`, the local op and the
// annotations. Private to lib/Dialect/SNN/Interfaces.
//
// With those three files and lib/Support/ShardAPI.cpp this header is the only code that uses
// the upstream shard API; nothing outside this folder includes it.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_DIALECT_SNN_INTERFACES_SHARDINGMODELSUPPORT_H
#define SNN_DIALECT_SNN_INTERFACES_SHARDINGMODELSUPPORT_H

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SmallVector.h"

#include <vector>

namespace snn::sharding {

using mlir::AffineExpr;
using mlir::ArrayRef;
using mlir::FailureOr;
using mlir::IRMapping;
using mlir::LogicalResult;
using mlir::MLIRContext;
using mlir::OpBuilder;
using mlir::Operation;
using mlir::SmallVector;
using mlir::SymbolTableCollection;
using mlir::Value;
using mlir::shard::Sharding;
using mlir::shard::ShardingOption;

using IteratorTypes = SmallVector<mlir::utils::IteratorType>;
constexpr auto kParallel = mlir::utils::IteratorType::parallel;
constexpr auto kReduction = mlir::utils::IteratorType::reduction;

int64_t rankOf(Value value);

/// `d0, ..., d(count-1)`.
SmallVector<AffineExpr> leadingDims(int64_t count, MLIRContext *ctx);

/// A loop an op never splits, and why (the end of a diagnostic).
struct WholeLoop {
  unsigned loop;
  const char *why;
};
constexpr const char *kTimeWhy = "it is T, which is never split (neuron state flows from step to "
                                 "step)";

/// The checks before `partition`: the `whole` loops unsplit, every split dim divisible.
LogicalResult checkPartitionable(Operation *op, ArrayRef<Sharding> operandShardings,
                                 ArrayRef<Sharding> resultShardings,
                                 SymbolTableCollection &symbols, ArrayRef<WholeLoop> whole);

/// Clones `op` onto `operands`, gives its results their local types and maps them.
Operation *cloneLocal(Operation &op, ArrayRef<Value> operands, ArrayRef<Sharding> resultShardings,
                      IRMapping &partitionMap, SymbolTableCollection &symbols,
                      OpBuilder &builder);

/// Annotates the results, then the operands, with `shardings` (operands first in the list),
/// as upstream's default does.
LogicalResult addAnnotations(Operation *op, OpBuilder &builder,
                             FailureOr<std::vector<Sharding>> shardings);

/// Keeps the `whole` loops unsplit. Refusing a split this way rather than failing keeps the
/// op annotated: propagation then marks the operands for a whole use (partition gathers them)
/// and a split result annotation becomes a local slice; an op left without annotations would
/// crash upstream's shard-partition, which needs every value annotated.
void keepWhole(ShardingOption &option, ArrayRef<WholeLoop> whole);

/// The local op; where a reduction loop (linear's `in`, conv's input channels) is split, each
/// process of a reduction group holds a partial sum over its slice: the local op runs without
/// its bias (operand 2), an all-reduce adds the partial sums, and `snn.bias_add` adds the bias
/// once to the sum. Every process thus holds the whole bias and computes the same gradient
/// for it (adding it on one process only would leave the others a zero gradient, and the
/// replicas of the bias would drift apart under an optimizer such as Adam).
void partitionContraction(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<Sharding> operandShardings, ArrayRef<Sharding> resultShardings,
                          IRMapping &partitionMap, SymbolTableCollection &symbols,
                          OpBuilder &builder);

/// Attaches the models of the ops on time-major tensors (TimeMajorShardingModels.cpp).
void registerTimeMajorShardingModels(MLIRContext *ctx);
/// Attaches the models of parameter, flatten and reshape (LayoutShardingModels.cpp).
void registerLayoutShardingModels(MLIRContext *ctx);

} // namespace snn::sharding

#endif // SNN_DIALECT_SNN_INTERFACES_SHARDINGMODELSUPPORT_H
