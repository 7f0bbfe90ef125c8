//===- SNNDistributedOps.cpp - Verifiers of the partitioned-program ops ---===//
//
// The ops the partitioning and stage-splitting passes insert: bias_add after a row-split
// Linear, the collectives over a mesh axis, and a pipeline stage's send / recv.
//
//===----------------------------------------------------------------------===//
#include "snn/Dialect/SNN/IR/SNNOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace snn;

//===----------------------------------------------------------------------===//
// Bias and collectives
//===----------------------------------------------------------------------===//

LogicalResult BiasAddOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  auto bias = cast<RankedTensorType>(getBias().getType());
  int64_t axis = getAxis();
  if (axis < 0 || axis >= input.getRank())
    return emitOpError("axis ") << axis << " is not a dimension of the rank-" << input.getRank()
                                << " input";
  if (bias.getRank() != 1)
    return emitOpError("bias must be rank 1, got rank ") << bias.getRank();
  if (!input.isDynamicDim(axis) && !bias.isDynamicDim(0) &&
      input.getDimSize(axis) != bias.getDimSize(0))
    return emitOpError("bias has ") << bias.getDimSize(0) << " elements for dimension " << axis
                                    << " of size " << input.getDimSize(axis);
  return success();
}

/// The size of `meshAxis` in the enclosing module's plan; 0 when the module has no plan
/// (the axis is then checked when the program is exported), -1 when the plan has no such axis.
static int64_t meshAxisSize(Operation *op, StringRef meshAxis) {
  auto module = op->getParentOfType<ModuleOp>();
  auto plan = module ? module->getAttrOfType<PlanAttr>(kPlanAttrName) : PlanAttr();
  if (!plan)
    return 0;
  for (auto [name, size] : llvm::zip(plan.getMeshAxes(), plan.getMeshShape()))
    if (cast<StringAttr>(name).getValue() == meshAxis)
      return size;
  return -1;
}

/// Checks every collective shares: a mesh axis the plan has. Returns its size (0: unknown).
static FailureOr<int64_t> verifyCollective(Operation *op, StringRef meshAxis) {
  if (meshAxis.empty()) {
    op->emitOpError("mesh_axis must name a mesh axis");
    return failure();
  }
  int64_t size = meshAxisSize(op, meshAxis);
  if (size < 0) {
    op->emitOpError("mesh axis '") << meshAxis << "' is not an axis of the plan's mesh";
    return failure();
  }
  return size;
}

/// all_gather (`grows`) and all_slice: only `axis` changes size, by the axis' member count.
static LogicalResult verifyResize(Operation *op, StringRef meshAxis, int64_t axis, bool grows) {
  FailureOr<int64_t> members = verifyCollective(op, meshAxis);
  if (failed(members))
    return failure();
  auto input = cast<RankedTensorType>(op->getOperand(0).getType());
  auto result = cast<RankedTensorType>(op->getResult(0).getType());
  if (input.getRank() != result.getRank() || axis < 0 || axis >= input.getRank())
    return op->emitOpError("axis ") << axis << " must be a dimension of input and result";
  for (int64_t dim = 0; dim < input.getRank(); ++dim) {
    int64_t in = input.getDimSize(dim), out = result.getDimSize(dim);
    if (ShapedType::isDynamic(in) || ShapedType::isDynamic(out))
      continue;
    int64_t whole = grows ? out : in, part = grows ? in : out;
    bool ok = dim != axis ? in == out
                          : (*members > 0 ? whole == part * *members : whole % part == 0);
    if (!ok)
      return op->emitOpError("dimension ")
             << dim << " is " << in << " in and " << out << " out, which "
             << (dim == axis ? "is not a split over mesh axis '" + meshAxis.str() + "'"
                             : std::string("must not change"));
  }
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (getInput().getType() != getResult().getType())
    return emitOpError("result type must equal the input type");
  return verifyCollective(*this, getMeshAxis());
}

LogicalResult BackwardAllReduceOp::verify() {
  if (getInput().getType() != getResult().getType())
    return emitOpError("result type must equal the input type");
  return verifyCollective(*this, getMeshAxis());
}

LogicalResult AllGatherOp::verify() {
  return verifyResize(*this, getMeshAxis(), getAxis(), /*grows=*/true);
}

LogicalResult AllSliceOp::verify() {
  return verifyResize(*this, getMeshAxis(), getAxis(), /*grows=*/false);
}

/// A boundary names another logical stage and a slot; inside a stage function (one with
/// `snn.pp_stage`) the peer must be another stage.
static LogicalResult verifyBoundary(Operation *op, int64_t peer, int64_t slot) {
  if (peer < 0 || slot < 0)
    return op->emitOpError("peer stage and slot must be non-negative, got stage ")
           << peer << " slot " << slot;
  Operation *func = op->getParentWithTrait<OpTrait::IsIsolatedFromAbove>();
  if (auto own = func ? func->getAttrOfType<IntegerAttr>(kStageAttrName) : IntegerAttr())
    if (own.getInt() == peer)
      return op->emitOpError("peer stage ") << peer << " is the stage it belongs to";
  return success();
}

LogicalResult SendOp::verify() { return verifyBoundary(*this, getPeer(), getSlot()); }

LogicalResult RecvOp::verify() { return verifyBoundary(*this, getPeer(), getSlot()); }
