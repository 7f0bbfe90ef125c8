//===- FoldRegionPlanner.h - Planning fold regions for LegalizeONNX ---*- C++ -*-===//
//
// SpikingJelly applies a stateless layer to every time step by folding [T, N, ...] into
// [T*N, ...], running the layer, and unfolding back. A fold region is that chain: the fold
// Reshape, the per-step layers, the unfold Reshape. Planning traces the region from its fold,
// checks both reshapes against the time-major tensor, and builds (without creating) the snn
// op that replaces each step on [T, N, ...]. Private to lib/Conversion/ONNXToSNN.
//
// Planning creates nothing, so the rewrite pattern can reject a region and leave the IR
// untouched, and the pass can rerun the same planning with emitting errors to explain a
// region the pattern left.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_CONVERSION_ONNXTOSNN_FOLDREGIONPLANNER_H
#define SNN_CONVERSION_ONNXTOSNN_FOLDREGIONPLANNER_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <memory>
#include <optional>

#include "snn/Dialect/SNN/IR/SNNOps.h"

#include "ONNXNodeReader.h"

namespace snn::legalize {

/// The snn op that replaces one step, built but not yet created. A whole chain is planned
/// before anything is created, so a rejected chain leaves the IR untouched. Held by pointer:
/// a moved OperationState would free its properties twice.
using StepState = std::unique_ptr<mlir::OperationState>;

/// A `[T, N, ...] -> [T*N, ...] -> steps -> [T, N, ...]` region, traced from its fold.
struct FoldRegion {
  ONNXNodeOp fold, unfold;
  SmallVector<ONNXNodeOp> steps; // from the fold's user to the unfold's input
  Value timeMajor;
  mlir::RankedTensorType timeMajorType;
  SmallVector<int64_t> unfoldShape;
  /// The fold's per-step dims when they differ from the input's (a reshaping fold).
  std::optional<SmallVector<int64_t>> reshapeTo;
};

/// A region with every step planned on placeholders of the inferred types.
struct PlannedRegion {
  FoldRegion region;
  StepState reshape; // the reshaping fold's snn.reshape; null for a plain fold
  SmallVector<StepState> steps;
};

/// The result types of `state`, an `OpTy` built without them, for `node`: the generated
/// inferring builders abort on a shape error, so inference runs here, its first
/// diagnostic captured and reported as a node error.
template <typename OpTy>
mlir::FailureOr<SmallVector<mlir::Type, 1>>
inferResultTypes(ONNXNodeOp node, mlir::OperationState &state, NodeErrors &errors) {
  mlir::MLIRContext *context = node.getContext();
  std::string message;
  SmallVector<mlir::Type, 1> types;
  mlir::LogicalResult inferred = mlir::failure();
  {
    mlir::ScopedDiagnosticHandler capture(context, [&](mlir::Diagnostic &diag) {
      if (message.empty())
        message = diag.str();
      return mlir::success();
    });
    inferred = OpTy::inferReturnTypes(context, state.location, state.operands,
                                      state.attributes.getDictionary(context),
                                      state.getRawProperties(), state.regions, types);
  }
  if (mlir::failed(inferred))
    return errors.report(node, OpTy::getOperationName() + ": " +
                                   (message.empty() ? "cannot infer the result type" : message));
  return types;
}

/// A Reshape to [-1, ...]: where a fold region starts.
bool isFold(ONNXNodeOp node);

/// A layer that may be a step of a fold region (it runs on [T*N, ...]).
bool isStepOp(Operation *op);

/// Traces and plans the region `fold` opens; nothing is created.
mlir::FailureOr<PlannedRegion> planFoldRegion(ONNXNodeOp fold, mlir::OpBuilder &builder,
                                              NodeErrors &errors);

} // namespace snn::legalize

#endif // SNN_CONVERSION_ONNXTOSNN_FOLDREGIONPLANNER_H
