// Rewrites generic `snn.onnx_node` ops into snn ops. The interesting pattern is the fold
// region: SpikingJelly applies a stateless layer to every time step by reshaping
// [T, N, ...] -> [T*N, ...], running the layer, and reshaping back. We recognise the whole
// chain and replace it with time-distributed ops on the time-major tensor, so no later pass
// ever sees the T*N folding.
//
// Diagnostics come from two walks, never from a pattern: the greedy driver may try a pattern
// on the same op many times (once per iteration it is revisited), and a pattern that reported
// printed its error once per try. Before any rewrite, every node is validated once (its kind,
// inputs, outputs and attributes: ONNXNodeReader). After the driver, each node left over that
// does not merely consume another leftover is explained once, by the same planning code the
// patterns ran silently (shapes: the snn ops' own inference, called so that it can fail).

#include "snn/Dialect/SNN/Transforms/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/FormatVariadic.h"

#include <memory>
#include <optional>

#include "snn/Dialect/SNN/IR/SNNOps.h"

#include "ONNXNodeReader.h"

namespace snn {
#define GEN_PASS_DEF_LEGALIZEONNX
#include "snn/Dialect/SNN/Transforms/Passes.h.inc"
} // namespace snn

using namespace mlir;
using namespace snn;

namespace {

using namespace snn::legalize;

std::string typeText(Type type) { return llvm::formatv("{0}", type).str(); }

// --- One step of a fold region: ONNX op on [T*N, ...] -> snn op on [T, N, ...] ----------------

/// The snn op that replaces one step, built but not yet created. A whole chain is planned
/// before anything is created, so a rejected chain leaves the IR untouched. Held by pointer:
/// a moved OperationState would free its properties twice.
using StepState = std::unique_ptr<OperationState>;

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
    if (type == "AdaptiveAvgPool2d") {
      auto size = readAdaptiveAvgPool(node, errors);
      if (failed(size))
        return failure();
      return build<AdaptiveAvgPool2dOp>(node, input, builder.getDenseI64ArrayAttr(*size));
    }
    if (type == "GroupNorm")
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

  static bool isStepOp(Operation *op) {
    static constexpr StringLiteral kStepOps[] = {
        "Gemm", "Conv", "BatchNormalization", "MaxPool", "AveragePool", "GlobalAveragePool",
        "Flatten", "Dropout", "Identity"};
    // SpikeMesh's own per-step nodes: what opset 13 cannot express.
    static constexpr StringLiteral kSpikeMeshStepOps[] = {"AdaptiveAvgPool2d", "GroupNorm"};
    auto node = dyn_cast_or_null<ONNXNodeOp>(op);
    if (node && node.getDomain() == kNeuronDomain)
      return llvm::is_contained(kSpikeMeshStepOps, node.getOpType());
    return node && node.getDomain().empty() &&
           llvm::is_contained(kStepOps, node.getOpType());
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
    MLIRContext *context = builder.getContext();
    std::string message;
    SmallVector<Type, 1> types;
    LogicalResult inferred = failure();
    {
      ScopedDiagnosticHandler capture(context, [&](Diagnostic &diag) {
        if (message.empty())
          message = diag.str();
        return success();
      });
      inferred = OpTy::inferReturnTypes(context, state->location, state->operands,
                                        state->attributes.getDictionary(context),
                                        state->getRawProperties(), state->regions, types);
    }
    if (failed(inferred))
      return errors.report(node, name + ": " +
                                     (message.empty() ? "cannot infer the result type" : message));
    state->types.assign(types.begin(), types.end());
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

// --- Fold regions ---------------------------------------------------------------------------

/// A `[T, N, ...] -> [T*N, ...] -> steps -> [T, N, ...]` region, traced from its fold.
struct FoldRegion {
  ONNXNodeOp fold, unfold;
  SmallVector<ONNXNodeOp> steps; // from the fold's user to the unfold's input
  Value timeMajor;
  RankedTensorType timeMajorType;
  SmallVector<int64_t> unfoldShape;
  /// The fold's per-step dims when they differ from the input's (a reshaping fold).
  std::optional<SmallVector<int64_t>> reshapeTo;
};

/// A Reshape to [-1, ...]: where a fold region starts.
bool isFold(ONNXNodeOp node) {
  if (!isNode(node, "Reshape") || node.getInputs().size() != 2)
    return false;
  auto shape = constantInts(node.getInputs()[1]);
  return shape && !shape->empty() && (*shape)[0] == -1;
}

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
    if (next && next.getInputs()[0] == result && StepPlanner::isStepOp(next)) {
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

/// A region with every step planned on placeholders of the inferred types.
struct PlannedRegion {
  FoldRegion region;
  StepState reshape; // the reshaping fold's snn.reshape; null for a plain fold
  SmallVector<StepState> steps;
};

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

/// ONNX has no buffers; BatchNorm's running statistics are PyTorch buffers, not weights.
void markStatisticsAsBuffers(ONNXNodeOp node, PatternRewriter &rewriter) {
  for (Value stat : node.getInputs().drop_front(3))
    if (auto param = stat.getDefiningOp<ParameterOp>(); param && !param.getBuffer())
      rewriter.modifyOpInPlace(param, [&] { param.setBuffer(true); });
}

/// Matches a fold `Reshape([T,N,...] -> [-1,...])`, the per-step layers after it and the
/// unfold `Reshape([T*N,...] -> [T,-1,...])`, and rewrites the chain.
struct FoldRegionPattern : OpRewritePattern<ONNXNodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ONNXNodeOp fold, PatternRewriter &rewriter) const override {
    if (!isFold(fold))
      return failure();
    NodeErrors errors = NodeErrors::silent();
    auto planned = planFoldRegion(fold, rewriter, errors);
    if (failed(planned))
      return rewriter.notifyMatchFailure(fold, "fold region not legal (yet)");

    rewriter.setInsertionPoint(planned->region.unfold);
    Value value = planned->region.timeMajor;
    if (planned->reshape) {
      planned->reshape->operands.front() = value;
      value = rewriter.create(*planned->reshape)->getResult(0);
    }
    for (auto [node, step] : llvm::zip_equal(planned->region.steps, planned->steps)) {
      if (isNode(node, "BatchNormalization"))
        markStatisticsAsBuffers(node, rewriter);
      if (!step)
        continue;
      step->operands.front() = value;
      value = rewriter.create(*step)->getResult(0);
    }
    rewriter.replaceOp(planned->region.unfold, value);
    for (ONNXNodeOp node : llvm::reverse(planned->region.steps))
      rewriter.eraseOp(node);
    rewriter.eraseOp(fold);
    return success();
  }
};

// --- Neurons and time-major ops ---------------------------------------------------------------

/// The time-major input of a neuron or time-major op; an error when it has no known shape or
/// is not [T, N, ...] f32.
FailureOr<RankedTensorType> timeMajorInput(ONNXNodeOp node, Value input, NodeErrors &errors) {
  auto type = dyn_cast<RankedTensorType>(input.getType());
  if (!type)
    return errors.report(node, "input has no known shape (" + typeText(input.getType()) +
                                   "); it must be a time-major [T, N, ...] tensor");
  if (!type.getElementType().isF32() || type.getRank() < 2)
    return errors.report(node, llvm::formatv("input must be a time-major [T, N, ...] f32 "
                                             "tensor, got {0}",
                                             type));
  return type;
}

/// A neuron's op, planned: its parameters and input type.
struct NeuronPlan {
  NeuronParams params;
  RankedTensorType inputType;
};

FailureOr<NeuronPlan> planNeuron(ONNXNodeOp node, Builder &builder, NodeErrors &errors) {
  auto params = readNeuron(node, builder, errors);
  if (failed(params))
    return failure();
  auto inputType = timeMajorInput(node, node.getInputs()[0], errors);
  if (failed(inputType))
    return failure();
  return NeuronPlan{*params, *inputType};
}

/// spikemesh.{IF,LIF,ParametricLIF}Node -> snn neuron ops.
struct NeuronPattern : OpRewritePattern<ONNXNodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ONNXNodeOp node, PatternRewriter &rewriter) const override {
    if (!isNeuronNode(node))
      return failure();
    NodeErrors errors = NodeErrors::silent();
    auto plan = planNeuron(node, rewriter, errors);
    if (failed(plan))
      return rewriter.notifyMatchFailure(node, "input not legalized yet, or invalid");
    const NeuronParams &p = plan->params;
    Value input = node.getInputs()[0], result;
    StringRef type = node.getOpType();
    if (type == "IFNode") {
      result = IFNodeOp::create(rewriter, node.getLoc(), plan->inputType, input, p.threshold,
                                p.reset, p.detach, p.surrogate, p.alpha);
    } else if (type == "LIFNode") {
      result = LIFNodeOp::create(rewriter, node.getLoc(), plan->inputType, input, p.tau,
                                 p.decayInput, p.threshold, p.reset, p.detach, p.surrogate,
                                 p.alpha);
    } else {
      result = PLIFNodeOp::create(rewriter, node.getLoc(), plan->inputType, input,
                                  node.getInputs()[1], p.decayInput, p.threshold, p.reset,
                                  p.detach, p.surrogate, p.alpha);
    }
    rewriter.replaceOp(node, result);
    return success();
  }
};

bool isTimeMajorOp(ONNXNodeOp node) {
  if (node.getDomain() == kNeuronDomain)
    return node.getOpType() == "SpikingAttention";
  return node.getDomain().empty() &&
         llvm::is_contained({"Add", "Mul", "ReduceMean", "ReduceSum", "Identity", "Concat"},
                            node.getOpType());
}

/// The result type of the `OpTy` that replaces `node`, built from `args`, or the shape
/// error the snn op's inference gives (its inferring builder would abort instead).
template <typename OpTy, typename... Args>
FailureOr<Type> inferredType(ONNXNodeOp node, NodeErrors &errors, Args &&...args) {
  MLIRContext *context = node.getContext();
  OpBuilder builder(context);
  OperationState state(node.getLoc(), OpTy::getOperationName());
  OpTy::build(builder, state, Type(), std::forward<Args>(args)...);
  std::string message;
  SmallVector<Type, 1> types;
  LogicalResult inferred = failure();
  {
    ScopedDiagnosticHandler capture(context, [&](Diagnostic &diag) {
      if (message.empty())
        message = diag.str();
      return success();
    });
    inferred = OpTy::inferReturnTypes(context, state.location, state.operands,
                                      state.attributes.getDictionary(context),
                                      state.getRawProperties(), state.regions, types);
  }
  if (failed(inferred))
    return errors.report(node, OpTy::getOperationName() + ": " + message);
  return types.front();
}

FailureOr<Type> concatType(ONNXNodeOp node, NodeErrors &errors) {
  FailureOr<int64_t> axis = readConcat(node, errors);
  if (failed(axis))
    return failure();
  auto inputs = node.getInputs();
  Builder builder(node.getContext());
  return inferredType<ConcatOp>(node, errors, inputs[0], inputs[1], inputs.drop_front(2),
                                builder.getI64IntegerAttr(*axis));
}

/// A per-step ReduceMean's or a SpikingAttention's result type (null for the readout over
/// T, which needs none).
FailureOr<Type> perStepType(ONNXNodeOp node, NodeErrors &errors) {
  Builder builder(node.getContext());
  Value input = node.getInputs()[0];
  if (node.getOpType() == "SpikingAttention") {
    auto params = readSpikingAttention(node, errors);
    if (failed(params))
      return failure();
    return inferredType<SpikingAttentionOp>(node, errors, input,
                                            builder.getI64IntegerAttr(params->heads),
                                            builder.getF32FloatAttr(params->scale),
                                            builder.getI64IntegerAttr(1));
  }
  auto params = readReduceMean(node, errors);
  if (failed(params))
    return failure();
  if (params->overTime)
    return Type();
  return inferredType<ReduceMeanOp>(node, errors, input,
                                    builder.getDenseI64ArrayAttr(params->axes),
                                    builder.getBoolAttr(params->keepdims));
}

LogicalResult planConcat(ONNXNodeOp node, NodeErrors &errors) {
  return failure(failed(concatType(node, errors)));
}

/// Checks an Add, Mul, ReduceMean, Identity or Concat on time-major tensors.
LogicalResult planTimeMajorOp(ONNXNodeOp node, NodeErrors &errors) {
  StringRef type = node.getOpType();
  auto inputs = node.getInputs();
  if (type == "ReduceMean" || type == "SpikingAttention")
    return failure(failed(timeMajorInput(node, inputs[0], errors)) ||
                   failed(perStepType(node, errors)));
  if (type == "ReduceSum") // its second input is the constant axes, not an activation
    return failure(failed(readReduceSum(node, errors)) ||
                   failed(timeMajorInput(node, inputs[0], errors)));
  for (Value input : inputs)
    if (failed(timeMajorInput(node, input, errors)))
      return failure();
  if (type == "Concat")
    return planConcat(node, errors);
  if ((type == "Add" || type == "Mul") && inputs[0].getType() != inputs[1].getType())
    return errors.report(node, llvm::formatv("operands must be time-major tensors of one "
                                             "type, got {0} and {1}",
                                             inputs[0].getType(), inputs[1].getType()));
  return success();
}

/// The op of a planned (valid) ReduceMean or SpikingAttention.
Value createPerStep(PatternRewriter &rewriter, ONNXNodeOp node, NodeErrors &errors) {
  Value input = node.getInputs()[0];
  Location loc = node.getLoc();
  if (node.getOpType() == "SpikingAttention") {
    SpikingAttentionParams p = *readSpikingAttention(node, errors);
    return SpikingAttentionOp::create(rewriter, loc, input, rewriter.getI64IntegerAttr(p.heads),
                                      rewriter.getF32FloatAttr(p.scale),
                                      rewriter.getI64IntegerAttr(1));
  }
  ReduceMeanParams p = *readReduceMean(node, errors);
  if (p.overTime)
    return MeanTimeOp::create(rewriter, loc, input);
  return ReduceMeanOp::create(rewriter, loc, input, rewriter.getDenseI64ArrayAttr(p.axes),
                              rewriter.getBoolAttr(p.keepdims));
}

/// Add/Mul of time-major tensors, the ReduceMean readout over T or per-step mean, spiking
/// attention, and Identity.
struct TimeMajorOpPattern : OpRewritePattern<ONNXNodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ONNXNodeOp node, PatternRewriter &rewriter) const override {
    if (!isTimeMajorOp(node))
      return failure();
    NodeErrors errors = NodeErrors::silent();
    if (failed(planTimeMajorOp(node, errors)))
      return rewriter.notifyMatchFailure(node, "inputs not legalized yet, or invalid");
    StringRef type = node.getOpType();
    auto inputs = node.getInputs();
    Value result = inputs[0];
    if (type == "Add")
      result = AddOp::create(rewriter, node.getLoc(), inputs[0], inputs[1]);
    else if (type == "Mul")
      result = MulOp::create(rewriter, node.getLoc(), inputs[0], inputs[1]);
    else if (type == "ReduceMean" || type == "SpikingAttention")
      result = createPerStep(rewriter, node, errors);
    else if (type == "ReduceSum")
      result = SumTimeOp::create(rewriter, node.getLoc(), inputs[0]);
    else if (type == "Concat")
      result = ConcatOp::create(rewriter, node.getLoc(), inputs[0], inputs[1],
                                inputs.drop_front(2),
                                rewriter.getI64IntegerAttr(*readConcat(node, errors)));
    rewriter.replaceOp(node, result);
    return success();
  }
};

// --- Reporting --------------------------------------------------------------------------------

/// Why a Reshape that opens no fold region is left.
void explainReshape(ONNXNodeOp node, NodeErrors &errors) {
  auto shape = readReshape(node, errors);
  if (failed(shape))
    return;
  if (shape->size() >= 2 && (*shape)[1] == -1) {
    (void)errors.report(node, "unfold Reshape to " + formatInts(*shape) +
                                  " without a fold: its input is not the last per-step layer "
                                  "of a region opened by a Reshape to [-1, ...]");
    return;
  }
  (void)errors.report(node, "Reshape to " + formatInts(*shape) +
                                " is supported only as the fold [T, N, ...] -> [-1, ...] or the "
                                "unfold [T*N, ...] -> [T, -1, ...] around per-step layers");
}

/// Explains why `node`, which consumes no other leftover node, survived the rewrite: the
/// planning its pattern ran silently, now emitting.
void explainLeftover(ONNXNodeOp node) {
  NodeErrors errors = NodeErrors::emitting();
  OpBuilder builder(node.getContext());
  if (isFold(node))
    (void)planFoldRegion(node, builder, errors);
  else if (isNode(node, "Reshape"))
    explainReshape(node, errors);
  else if (isTimeMajorOp(node)) // before the step ops: Identity is both
    (void)planTimeMajorOp(node, errors);
  else if (StepPlanner::isStepOp(node))
    (void)errors.report(node, "per-step layer outside a [T*N, ...] fold region");
  else if (isNeuronNode(node))
    (void)planNeuron(node, builder, errors);
  if (!errors.failed()) // the pattern and its explanation disagree: a bug, not bad input
    (void)errors.report(node, "internal error: valid but not legalized");
}

/// Reports every leftover node that is a cause, not a consequence: one that consumes another
/// leftover cannot be legalized before that one is, and would only echo its error.
bool reportLeftovers(func::FuncOp func) {
  bool any = false;
  func.walk([&](ONNXNodeOp node) {
    any = true;
    auto isLeftover = [](Value v) { return isa_and_nonnull<ONNXNodeOp>(v.getDefiningOp()); };
    if (llvm::none_of(node.getInputs(), isLeftover))
      explainLeftover(node);
  });
  return any;
}

/// Names the function whose rewrite did not reach a fixpoint and what is still unlegalized.
void reportNoConvergence(func::FuncOp func, int64_t maxIterations) {
  int64_t left = 0;
  func.walk([&](ONNXNodeOp) { ++left; });
  func.emitError() << "ONNX legalization of function '@" << func.getSymName()
                   << "' did not converge within " << maxIterations
                   << " iteration(s) of its rewrite patterns (" << left
                   << " snn.onnx_node op(s) left)";
}

struct LegalizeONNXPass : snn::impl::LegalizeONNXBase<LegalizeONNXPass> {
  using LegalizeONNXBase::LegalizeONNXBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (maxIterations < 1) {
      func.emitError() << "snn-legalize-onnx: max-iterations must be >= 1, got "
                       << static_cast<int64_t>(maxIterations);
      return signalPassFailure();
    }
    // Every node once, before any rewrite: the patterns then meet only valid nodes.
    NodeErrors errors = NodeErrors::emitting();
    func.walk([&](ONNXNodeOp node) { (void)validateNode(node, errors); });
    if (errors.failed())
      return signalPassFailure();

    RewritePatternSet patterns(&getContext());
    patterns.add<FoldRegionPattern, NeuronPattern, TimeMajorOpPattern>(&getContext());
    GreedyRewriteConfig config;
    config.setUseTopDownTraversal(true);
    config.setMaxIterations(maxIterations);
    // A driver that stops short leaves a half-rewritten function; never pass it on.
    if (failed(applyPatternsGreedily(func, std::move(patterns), config))) {
      reportNoConvergence(func, maxIterations);
      return signalPassFailure();
    }
    if (reportLeftovers(func))
      return signalPassFailure();

    auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
    func.setType(FunctionType::get(&getContext(), func.getArgumentTypes(),
                                   ret.getOperandTypes()));
  }
};

} // namespace
