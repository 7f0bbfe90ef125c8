//===- FoldRegionPlanner.cpp - Planning fold regions for LegalizeONNX -----===//
//
// A fold region, from its fold Reshape to its unfold Reshape, traced and checked, and each
// per-step ONNX layer on [T*N, ...] planned as the snn op that runs it on [T, N, ...]. The
// planning is silent or emitting as its NodeErrors is: the pattern plans silently, the
// pass replans a region left over with emitting errors to explain it.
//
//===----------------------------------------------------------------------===//
#include "FoldRegionPlanner.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace snn::legalize {

// --- One step of a fold region: ONNX op on [T*N, ...] -> snn op on [T, N, ...] ----------------

bool isStepOp(Operation *op) {
  static constexpr StringLiteral kStepOps[] = {
      "Gemm", "Conv", "BatchNormalization", "MaxPool", "AveragePool", "GlobalAveragePool",
      "Flatten", "Dropout", "Identity"};
  // SpikeMesh's own per-step nodes: what opset 13 cannot express.
  static constexpr StringRef kSpikeMeshStepOps[] = {profile::op::kAdaptiveAvgPool2d,
                                                     profile::op::kGroupNorm};
  auto node = dyn_cast_or_null<ONNXNodeOp>(op);
  if (node && node.getDomain() == kNeuronDomain)
    return llvm::is_contained(kSpikeMeshStepOps, node.getOpType());
  return node && node.getDomain().empty() && llvm::is_contained(kStepOps, node.getOpType());
}

namespace {

/// Plans one step at a time, each on the value the previous step's plan gives.
class StepPlanner {
public:
  StepPlanner(OpBuilder &builder, NodeErrors &errors) : builder(builder), errors(errors) {}

  /// Plans `node` applied to `input`; a null state means the step is the identity.
  FailureOr<StepState> plan(ONNXNodeOp node, Value input) {
    StringRef type = node.getOpType();
    if (type == "Gemm")
      return gemm(node, input);
    if (type == "Conv")
      return conv(node, input);
    if (type == "BatchNormalization")
      return batchNorm(node, input);
    if (type == "MaxPool")
      return maxPool(node, input);
    if (type == "AveragePool")
      return avgPool(node, input);
    if (type == "GlobalAveragePool")
      return build<AdaptiveAvgPool2dOp>(node, input, builder.getDenseI64ArrayAttr({1, 1}));
    if (type == profile::op::kAdaptiveAvgPool2d) {
      auto size = readAdaptiveAvgPool(node, errors);
      if (failed(size))
        return failure();
      return build<AdaptiveAvgPool2dOp>(node, input, builder.getDenseI64ArrayAttr(*size));
    }
    if (type == profile::op::kGroupNorm)
      return groupNorm(node, input);
    if (type == "Flatten") {
      if (failed(readFlatten(node, errors)))
        return failure();
      return build<FlattenOp>(node, input);
    }
    if (type == "Dropout") {
      FailureOr<float> ratio = readDropout(node, errors);
      if (failed(ratio))
        return failure();
      return build<DropoutOp>(node, input, builder.getF32FloatAttr(*ratio));
    }
    return StepState(); // Identity
  }

  /// A reshaping fold ([T, N, d...] -> [-1, e...] with the same count per step) starts with
  /// this step.
  FailureOr<StepState> reshape(ONNXNodeOp fold, Value input, ArrayRef<int64_t> stepShape) {
    return build<ReshapeOp>(fold, input, builder.getDenseI64ArrayAttr(stepShape));
  }

private:
  /// Builds the state of an `OpTy` and infers its result type. The generated inferring
  /// builders abort on a shape error, so the check runs here and becomes a node error.
  template <typename OpTy, typename... Args>
  FailureOr<StepState> build(ONNXNodeOp node, Args &&...args) {
    auto state = std::make_unique<OperationState>(node.getLoc(), OpTy::getOperationName());
    OpTy::build(builder, *state, Type(), std::forward<Args>(args)...);
    StringRef name = OpTy::getOperationName();
    // Inference casts operands to ranked tensors before any verifier has run.
    for (auto [index, operand] : llvm::enumerate(state->operands)) {
      auto type = dyn_cast<RankedTensorType>(operand.getType());
      if (!type || !type.getElementType().isF32())
        return errors.report(node, llvm::formatv("{0} operand #{1} must be a ranked f32 "
                                                 "tensor, got {2}",
                                                 name, index, operand.getType()));
    }
    FailureOr<SmallVector<Type, 1>> types = inferResultTypes<OpTy>(node, *state, errors);
    if (failed(types))
      return failure();
    state->types.assign(types->begin(), types->end());
    return state;
  }

  FailureOr<StepState> gemm(ONNXNodeOp node, Value input) {
    if (failed(readGemm(node, errors)))
      return failure();
    auto inputs = node.getInputs();
    Value bias = inputs.size() > 2 ? inputs[2] : Value();
    return build<LinearOp>(node, input, inputs[1], bias);
  }

  FailureOr<StepState> conv(ONNXNodeOp node, Value input) {
    auto conv = readConv(node, errors);
    if (failed(conv))
      return failure();
    const auto &[window, group] = *conv;
    auto inputs = node.getInputs();
    Value bias = inputs.size() > 2 ? inputs[2] : Value();
    return build<Conv2dOp>(node, input, inputs[1], bias,
                           builder.getDenseI64ArrayAttr(window.strides),
                           builder.getDenseI64ArrayAttr(window.pads),
                           builder.getDenseI64ArrayAttr(window.dilations),
                           builder.getI64IntegerAttr(group));
  }

  FailureOr<StepState> batchNorm(ONNXNodeOp node, Value input) {
    auto params = readBatchNorm(node, errors);
    if (failed(params))
      return failure();
    auto inputs = node.getInputs();
    return build<BatchNormOp>(node, input, inputs[1], inputs[2], inputs[3], inputs[4],
                              builder.getF32FloatAttr(params->epsilon),
                              builder.getF32FloatAttr(params->momentum));
  }

  FailureOr<StepState> groupNorm(ONNXNodeOp node, Value input) {
    auto params = readGroupNorm(node, errors);
    if (failed(params))
      return failure();
    auto inputs = node.getInputs();
    return build<GroupNormOp>(node, input, inputs[1], inputs[2],
                              builder.getI64IntegerAttr(params->groups),
                              builder.getF32FloatAttr(params->epsilon));
  }

  FailureOr<StepState> maxPool(ONNXNodeOp node, Value input) {
    auto window = readWindow(node, errors);
    if (failed(window))
      return failure();
    return build<MaxPool2dOp>(node, input, builder.getDenseI64ArrayAttr(window->kernel),
                              builder.getDenseI64ArrayAttr(window->strides),
                              builder.getDenseI64ArrayAttr(window->pads),
                              builder.getBoolAttr(window->ceilMode),
                              builder.getDenseI64ArrayAttr(window->dilations));
  }

  FailureOr<StepState> avgPool(ONNXNodeOp node, Value input) {
    auto window = readWindow(node, errors);
    if (failed(window))
      return failure();
    return build<AvgPool2dOp>(node, input, builder.getDenseI64ArrayAttr(window->kernel),
                              builder.getDenseI64ArrayAttr(window->strides),
                              builder.getDenseI64ArrayAttr(window->pads),
                              builder.getBoolAttr(window->ceilMode),
                              builder.getBoolAttr(window->countIncludePad));
  }

  OpBuilder &builder;
  NodeErrors &errors;
};

} // namespace

// --- Fold regions ---------------------------------------------------------------------------

/// A Reshape to [-1, ...]: where a fold region starts.
bool isFold(ONNXNodeOp node) {
  if (!isNode(node, "Reshape") || node.getInputs().size() != 2)
    return false;
  auto shape = constantInts(node.getInputs()[1]);
  return shape && !shape->empty() && (*shape)[0] == -1;
}

namespace {

/// The product of static positive dims; nullopt if any is not, or it overflows.
std::optional<int64_t> elementCount(ArrayRef<int64_t> dims) {
  int64_t count = 1;
  for (int64_t dim : dims) {
    std::optional<int64_t> next = dim > 0 ? llvm::checkedMul(count, dim) : std::nullopt;
    if (!next)
      return std::nullopt;
    count = *next;
  }
  return count;
}

/// The fold's own shape against its input: [-1] then the input's dims after T and N, or
/// other static dims holding as many values per step (the fold then also reshapes).
LogicalResult checkFold(ONNXNodeOp fold, FoldRegion &region, NodeErrors &errors) {
  auto shape = readReshape(fold, errors);
  if (failed(shape))
    return failure();
  region.fold = fold;
  region.timeMajor = fold.getInputs()[0];
  region.timeMajorType = dyn_cast<RankedTensorType>(region.timeMajor.getType());
  if (!region.timeMajorType)
    return errors.report(fold, "folds a time-major [T, N, ...] tensor, but its input has no "
                               "known shape (" + typeText(region.timeMajor.getType()) + ")");
  ArrayRef<int64_t> dims = region.timeMajorType.getShape();
  ArrayRef<int64_t> stepShape = ArrayRef<int64_t>(*shape).drop_front();
  if (dims.size() >= 3 && stepShape == dims.drop_front(2))
    return success();
  std::optional<int64_t> from = elementCount(dims.drop_front(std::min<size_t>(2, dims.size())));
  if (dims.size() < 3 || stepShape.empty() || !from || elementCount(stepShape) != from)
    return errors.report(fold, llvm::formatv("fold shape {0} must be [-1] followed by the "
                                             "dims after T and N of its input {1}, or by "
                                             "static dims of as many values per step",
                                             formatInts(*shape), region.timeMajorType));
  region.reshapeTo = SmallVector<int64_t>(stepShape);
  return success();
}

/// Follows the single-use chain of per-step layers from the fold to the unfold.
LogicalResult traceSteps(FoldRegion &region, NodeErrors &errors) {
  Operation *last = region.fold;
  while (true) {
    Value result = last->getResult(0);
    auto lastNode = cast<ONNXNodeOp>(last);
    if (!result.hasOneUse()) {
      size_t uses = llvm::range_size(result.getUses());
      if (last == region.fold)
        return errors.report(lastNode, "the folded [T*N, ...] result must have exactly one "
                                       "use, the region's first per-step layer; it has " +
                                           Twine(uses));
      return errors.report(lastNode, llvm::formatv("a per-step [T*N, ...] result inside the "
                                                   "fold region of '{0}' must have exactly one "
                                                   "use, the next layer or the unfold; it has {1}",
                                                   nodeName(region.fold), uses));
    }
    auto next = dyn_cast<ONNXNodeOp>(*result.getUsers().begin());
    if (next && next.getInputs()[0] == result && isStepOp(next)) {
      region.steps.push_back(next);
      last = next;
      continue;
    }
    if (next && next.getInputs()[0] == result && isNode(next, "Reshape")) {
      region.unfold = next;
      return success();
    }
    if (!next)
      return errors.report(region.fold, "the [T*N, ...] fold region it opens is never unfolded "
                                        "to [T, N, ...] by a Reshape");
    return errors.report(next, llvm::formatv("is inside the [T*N, ...] fold region of '{0}' "
                                             "but is not a per-step layer; the region must end "
                                             "with a Reshape to [T, -1, ...] before it",
                                             nodeName(region.fold)));
  }
}

/// The unfold restores [T, N, ...]: [T, -1, ...] with the fold input's T.
LogicalResult checkUnfold(FoldRegion &region, NodeErrors &errors) {
  auto shape = readReshape(region.unfold, errors);
  if (failed(shape))
    return failure();
  region.unfoldShape = std::move(*shape);
  int64_t steps = region.timeMajorType.getDimSize(0);
  if (region.unfoldShape.size() < 2 || region.unfoldShape[1] != -1 ||
      region.unfoldShape[0] != steps)
    return errors.report(region.unfold,
                         llvm::formatv("unfold shape {0} must be [T, -1, ...] with T = {1}, the "
                                       "time steps of the fold's input {2}",
                                       formatInts(region.unfoldShape),
                                       ShapedType::isDynamic(steps) ? "?" : std::to_string(steps),
                                       region.timeMajorType));
  return success();
}

} // namespace

/// Traces and plans the region `fold` opens; nothing is created.
FailureOr<PlannedRegion> planFoldRegion(ONNXNodeOp fold, OpBuilder &builder,
                                        NodeErrors &errors) {
  PlannedRegion planned;
  FoldRegion &region = planned.region;
  if (failed(checkFold(fold, region, errors)) || failed(traceSteps(region, errors)) ||
      failed(checkUnfold(region, errors)))
    return failure();
  Block placeholders;
  StepPlanner planner(builder, errors);
  Value value = region.timeMajor;
  if (region.reshapeTo) {
    auto step = planner.reshape(fold, value, *region.reshapeTo);
    if (failed(step))
      return failure();
    value = placeholders.addArgument((*step)->types.front(), fold.getLoc());
    planned.reshape = std::move(*step);
  }
  for (ONNXNodeOp node : region.steps) {
    auto step = planner.plan(node, value);
    if (failed(step))
      return failure();
    if (*step)
      value = placeholders.addArgument((*step)->types.front(), node.getLoc());
    planned.steps.push_back(std::move(*step));
  }
  auto resultType = cast<RankedTensorType>(value.getType());
  if (ArrayRef<int64_t>(region.unfoldShape).drop_front(2) != resultType.getShape().drop_front(2))
    return errors.report(region.unfold,
                         llvm::formatv("unfold shape does not match the per-step result shape: "
                                       "{0} for {1}, the time-major result of {2}",
                                       formatInts(region.unfoldShape), resultType,
                                       region.steps.empty()
                                           ? "the fold's input"
                                           : "'" + nodeName(region.steps.back()) + "' (" +
                                                 region.steps.back().getOpType().str() + ")"));
  return planned;
}

} // namespace snn::legalize
