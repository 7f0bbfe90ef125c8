//===- PartitionedValues.h - What a per-rank program's values are ---*- C++ -*-===//
//
// Two facts about each value of a partitioned (per-rank) @main that the passes after
// --snn-partition, the communication estimate and the exporter all need, derived once here
// so they cannot disagree:
//   - the mesh axes over which it differs from rank to rank (a part of a split tensor, or a
//     partial sum): results of snn.all_slice over the axis, and of any op with such an
//     operand, except snn.all_reduce / snn.all_gather, whose result is whole over their axis;
//   - whether it requires a gradient: a trainable snn.parameter (not a `buffer`) and what is
//     computed from one; @main's input does not.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_DIALECT_SNN_TRANSFORMS_PARTITIONEDVALUES_H
#define SNN_DIALECT_SNN_TRANSFORMS_PARTITIONEDVALUES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

namespace snn {

class PartitionedValues {
public:
  /// Reads the entry block of `func` in program order.
  explicit PartitionedValues(mlir::func::FuncOp func);

  /// The mesh axes (names, sorted) over which `value` differs from rank to rank; empty when
  /// every rank holds the same value.
  llvm::ArrayRef<llvm::StringRef> varyingAxes(mlir::Value value) const;
  bool variesOver(mlir::Value value, llvm::StringRef axis) const;
  bool requiresGrad(mlir::Value value) const { return grad.contains(value); }

private:
  void visit(mlir::Operation &op);

  llvm::DenseMap<mlir::Value, llvm::SmallVector<llvm::StringRef, 1>> varying;
  llvm::DenseSet<mlir::Value> grad;
};

} // namespace snn

#endif
