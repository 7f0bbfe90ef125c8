// Rewrites generic `snn.onnx_node` ops into snn ops. The interesting pattern is the fold
// region: SpikingJelly applies a stateless layer to every time step by reshaping
// [T, N, ...] -> [T*N, ...], running the layer, and reshaping back. We recognise the whole
// chain and replace it with time-distributed ops on the time-major tensor, so no later pass
// ever sees the T*N folding.

#include "snn/Dialect/SNN/Transforms/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>

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

// --- One step of a fold region: ONNX op on [T*N, ...] -> snn op on [T, N, ...] ----------------

/// The snn op that replaces one step, built but not yet created. A whole chain is planned
/// before anything is created, so a rejected chain leaves the IR untouched. Held by pointer:
/// a moved OperationState would free its properties twice.
using StepState = std::unique_ptr<OperationState>;

class StepPlanner {
public:
  StepPlanner(OpBuilder &builder, ErrorState &errors) : builder(builder), errors(errors) {}

  /// Plans `node` applied to `input`; a null state means the step is the identity.
  FailureOr<StepState> plan(ONNXNodeOp node, Value input) {
    if (failed(checkArity(node, errors)))
      return failure();
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
    if (type == "Flatten")
      return flatten(node, input);
    if (type == "Dropout")
      return dropout(node, input);
    return StepState(); // Identity
  }

  static bool isStepOp(Operation *op) {
    static constexpr StringLiteral kStepOps[] = {
        "Gemm", "Conv", "BatchNormalization", "MaxPool", "AveragePool", "GlobalAveragePool",
        "Flatten", "Dropout", "Identity"};
    auto node = dyn_cast_or_null<ONNXNodeOp>(op);
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
    AttrReader attrs(node, errors);
    int64_t transA = attrs.getInt("transA", 0), transB = attrs.getInt("transB", 0);
    float alpha = attrs.getFloat("alpha", 1.0f), beta = attrs.getFloat("beta", 1.0f);
    if (attrs.failed())
      return failure();
    if (transA != 0 || transB != 1 || alpha != 1.0f || beta != 1.0f)
      return errors.report(node, "only Gemm with transB=1, transA=0, alpha=beta=1 (Linear)");
    auto inputs = node.getInputs();
    Value bias = inputs.size() > 2 ? inputs[2] : Value();
    return build<LinearOp>(node, input, inputs[1], bias);
  }

  FailureOr<StepState> conv(ONNXNodeOp node, Value input) {
    AttrReader attrs(node, errors);
    int64_t group = attrs.getInt("group", 1);
    if (attrs.failed())
      return failure();
    auto window = readWindow(node, errors);
    if (failed(window))
      return failure();
    if (group < 1)
      return errors.report(node, "attribute 'group' must be positive, got " + Twine(group));
    auto inputs = node.getInputs();
    // kernel_shape is optional in ONNX; when given it must be the weight's.
    auto weight = dyn_cast<RankedTensorType>(inputs[1].getType());
    if (!window->kernel.empty() && weight && weight.getRank() == 4 &&
        ArrayRef<int64_t>(window->kernel) != weight.getShape().drop_front(2))
      return errors.report(node, llvm::formatv("kernel_shape {0} does not match the weight's "
                                               "spatial dims {1}",
                                               formatInts(window->kernel),
                                               formatInts(weight.getShape().drop_front(2))));
    Value bias = inputs.size() > 2 ? inputs[2] : Value();
    return build<Conv2dOp>(node, input, inputs[1], bias,
                           builder.getDenseI64ArrayAttr(window->strides),
                           builder.getDenseI64ArrayAttr(window->pads),
                           builder.getDenseI64ArrayAttr(window->dilations),
                           builder.getI64IntegerAttr(group));
  }

  FailureOr<StepState> batchNorm(ONNXNodeOp node, Value input) {
    AttrReader attrs(node, errors);
    float epsilon = attrs.getFloat("epsilon", 1e-5f);
    float momentum = attrs.getFloat("momentum", 0.9f);
    int64_t training = attrs.getInt("training_mode", 0);
    if (attrs.failed())
      return failure();
    if (training != 0)
      return errors.report(node, "training_mode=1 is not supported (inference form only)");
    if (!(epsilon > 0.0f) || !std::isfinite(epsilon))
      return errors.report(node, "attribute 'epsilon' must be finite and > 0, got " +
                                     formatFloat(epsilon));
    if (!(momentum >= 0.0f && momentum <= 1.0f))
      return errors.report(node, "attribute 'momentum' must be in [0, 1], got " +
                                     formatFloat(momentum));
    auto inputs = node.getInputs();
    return build<BatchNormOp>(node, input, inputs[1], inputs[2], inputs[3], inputs[4],
                              builder.getF32FloatAttr(epsilon),
                              builder.getF32FloatAttr(pytorchMomentum(momentum)));
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

  FailureOr<StepState> flatten(ONNXNodeOp node, Value input) {
    AttrReader attrs(node, errors);
    int64_t axis = attrs.getInt("axis", 1);
    if (attrs.failed())
      return failure();
    if (axis != 1)
      return errors.report(node, "only Flatten(axis=1) of a folded tensor is supported");
    return build<FlattenOp>(node, input);
  }

  FailureOr<StepState> dropout(ONNXNodeOp node, Value input) {
    AttrReader attrs(node, errors);
    attrs.getInt("seed", 0); // unused in inference; type-checked only
    if (attrs.failed())
      return failure();
    float ratio = 0.5f;
    auto inputs = node.getInputs();
    if (inputs.size() > 1) {
      auto param = inputs[1].getDefiningOp<ParameterOp>();
      auto value = param ? dyn_cast<DenseFPElementsAttr>(param.getValue()) : nullptr;
      if (!value || value.getNumElements() != 1)
        return errors.report(node, "Dropout ratio must be a constant scalar");
      ratio = (*value.getValues<float>().begin());
    }
    return build<DropoutOp>(node, input, builder.getF32FloatAttr(ratio));
  }

  OpBuilder &builder;
  ErrorState &errors;
};

/// The per-step node that produces `value` as its first result and has no other use.
ONNXNodeOp stepProducer(Value value) {
  auto result = dyn_cast<OpResult>(value);
  if (!result || result.getResultNumber() != 0 || !StepPlanner::isStepOp(result.getOwner()))
    return {};
  auto node = cast<ONNXNodeOp>(result.getOwner());
  if (!node->hasOneUse() || node.getInputs().empty())
    return {};
  return node;
}

/// ONNX has no buffers; BatchNorm's running statistics are PyTorch buffers, not weights.
void markStatisticsAsBuffers(ONNXNodeOp node, PatternRewriter &rewriter) {
  for (Value stat : node.getInputs().drop_front(3))
    if (auto param = stat.getDefiningOp<ParameterOp>(); param && !param.getBuffer())
      rewriter.modifyOpInPlace(param, [&] { param.setBuffer(true); });
}

/// A matched `[T, N, ...] -> [T*N, ...] -> steps -> [T, N, ...]` region.
struct FoldRegion {
  ONNXNodeOp fold;
  SmallVector<ONNXNodeOp> chain; // from the unfold's input back to the fold's user
  Value timeMajor;
  SmallVector<int64_t> unfoldShape;
};

/// Matches `Reshape([T*N,...] -> [T,-1,...])` (the unfold) whose input chain of per-step ops
/// starts at `Reshape([T,N,...] -> [-1,...])` (the fold), and rewrites the chain.
struct FoldRegionPattern : OpRewritePattern<ONNXNodeOp> {
  FoldRegionPattern(MLIRContext *context, ErrorState &errors)
      : OpRewritePattern(context), errors(errors) {}

  LogicalResult matchAndRewrite(ONNXNodeOp unfold, PatternRewriter &rewriter) const override {
    auto region = match(unfold);
    if (failed(region))
      return failure();
    // Plan every step on placeholders of the inferred types before creating anything.
    Block placeholders;
    StepPlanner planner(rewriter, errors);
    SmallVector<StepState> steps;
    Value value = region->timeMajor;
    for (ONNXNodeOp node : llvm::reverse(region->chain)) {
      auto step = planner.plan(node, value);
      if (failed(step))
        return failure();
      if (*step)
        value = placeholders.addArgument((*step)->types.front(), node.getLoc());
      steps.push_back(std::move(*step));
    }
    auto resultType = cast<RankedTensorType>(value.getType());
    if (ArrayRef<int64_t>(region->unfoldShape).drop_front(2) != resultType.getShape().drop_front(2))
      return errors.report(unfold, "unfold shape does not match the per-step result shape");

    rewriter.setInsertionPoint(unfold);
    value = region->timeMajor;
    for (auto [node, step] : llvm::zip_equal(llvm::reverse(region->chain), steps)) {
      if (isNode(node, "BatchNormalization"))
        markStatisticsAsBuffers(node, rewriter);
      if (!step)
        continue;
      step->operands.front() = value;
      value = rewriter.create(*step)->getResult(0);
    }
    rewriter.replaceOp(unfold, value);
    for (ONNXNodeOp node : region->chain)
      rewriter.eraseOp(node);
    rewriter.eraseOp(region->fold);
    return success();
  }

  static FailureOr<FoldRegion> match(ONNXNodeOp unfold) {
    if (!isNode(unfold, "Reshape") || unfold.getInputs().size() != 2 ||
        unfold->getNumResults() != 1)
      return failure();
    FoldRegion region;
    auto unfoldShape = constantInts(unfold.getInputs()[1]);
    if (!unfoldShape || unfoldShape->size() < 2 || (*unfoldShape)[1] != -1)
      return failure();
    region.unfoldShape = std::move(*unfoldShape);

    Value link = unfold.getInputs()[0];
    while (ONNXNodeOp step = stepProducer(link)) {
      region.chain.push_back(step);
      link = step.getInputs()[0];
    }
    region.fold = link.getDefiningOp<ONNXNodeOp>();
    if (!region.fold || !isNode(region.fold, "Reshape") ||
        region.fold.getInputs().size() != 2 || !region.fold->hasOneUse())
      return failure();
    region.timeMajor = region.fold.getInputs()[0];
    auto inputType = dyn_cast<RankedTensorType>(region.timeMajor.getType());
    auto foldShape = constantInts(region.fold.getInputs()[1]);
    if (!inputType || inputType.getRank() < 3 || !foldShape || foldShape->empty() ||
        (*foldShape)[0] != -1 ||
        ArrayRef<int64_t>(*foldShape).drop_front() != inputType.getShape().drop_front(2) ||
        region.unfoldShape[0] != inputType.getDimSize(0))
      return failure();
    return region;
  }

  ErrorState &errors;
};

/// A neuron node's attributes, read and checked.
struct NeuronParams {
  FloatAttr threshold, reset, alpha, tau;
  BoolAttr detach, decayInput;
  SurrogateKindAttr surrogate;
};

FailureOr<NeuronParams> readNeuron(ONNXNodeOp node, OpBuilder &builder, ErrorState &errors) {
  StringRef type = node.getOpType();
  AttrReader attrs(node, errors);
  StringRef surrogateName = attrs.getString("surrogate", "sigmoid");
  float threshold = attrs.getFloat("v_threshold", 1.0f);
  std::optional<float> reset = attrs.getOptionalFloat("v_reset");
  std::optional<float> alpha = attrs.getOptionalFloat("alpha");
  bool detach = attrs.getFlag("detach_reset", false);
  bool decayInput = type != "IFNode" && attrs.getFlag("decay_input", true);
  float tau = type == "LIFNode" ? attrs.getFloat("tau", 2.0f) : 2.0f;
  if (type == "ParametricLIFNode")
    attrs.getOptionalFloat("init_tau"); // informational; type-checked only
  if (attrs.failed())
    return failure();

  std::optional<SurrogateKind> surrogate = symbolizeSurrogateKind(surrogateName);
  if (!surrogate)
    return errors.report(node, "unknown surrogate '" + surrogateName +
                                   "' (expected sigmoid or atan)");
  float alphaValue = alpha.value_or(*surrogate == SurrogateKind::atan ? 2.0f : 4.0f);
  bool bad = false;
  auto check = [&](bool ok, const Twine &message) {
    if (!ok) {
      bad = true;
      (void)errors.report(node, message);
    }
  };
  check(std::isfinite(threshold), "attribute 'v_threshold' must be finite, got " +
                                      formatFloat(threshold));
  check(!reset || std::isfinite(*reset),
        "attribute 'v_reset' must be finite, got " + formatFloat(reset.value_or(0.0f)));
  check(alphaValue > 0.0f && std::isfinite(alphaValue),
        "attribute 'alpha' must be finite and > 0, got " + formatFloat(alphaValue));
  check(tau > 1.0f, "tau must be > 1, got " + formatFloat(tau));
  check(std::isfinite(tau), "tau must be finite, got " + formatFloat(tau));
  if (bad)
    return failure();

  NeuronParams params;
  params.threshold = builder.getF32FloatAttr(threshold);
  if (reset)
    params.reset = builder.getF32FloatAttr(*reset);
  params.alpha = builder.getF32FloatAttr(alphaValue);
  params.tau = builder.getF32FloatAttr(tau);
  params.detach = builder.getBoolAttr(detach);
  params.decayInput = builder.getBoolAttr(decayInput);
  params.surrogate = SurrogateKindAttr::get(builder.getContext(), *surrogate);
  return params;
}

/// spikemesh.{IF,LIF,ParametricLIF}Node -> snn neuron ops.
struct NeuronPattern : OpRewritePattern<ONNXNodeOp> {
  NeuronPattern(MLIRContext *context, ErrorState &errors)
      : OpRewritePattern(context), errors(errors) {}

  LogicalResult matchAndRewrite(ONNXNodeOp node, PatternRewriter &rewriter) const override {
    if (node.getDomain() != kNeuronDomain)
      return failure();
    StringRef type = node.getOpType();
    if (type != "IFNode" && type != "LIFNode" && type != "ParametricLIFNode")
      return failure();
    if (failed(checkArity(node, errors)))
      return failure();
    auto params = readNeuron(node, rewriter, errors);
    if (failed(params))
      return failure();
    Value input = node.getInputs()[0];
    auto inputType = dyn_cast<RankedTensorType>(input.getType());
    if (!inputType)
      return failure(); // its producer is not legalized yet
    if (!inputType.getElementType().isF32() || inputType.getRank() < 2)
      return errors.report(node, llvm::formatv("input must be a time-major [T, N, ...] f32 "
                                               "tensor, got {0}",
                                               inputType));

    Value result;
    const NeuronParams &p = *params;
    if (type == "IFNode") {
      result = IFNodeOp::create(rewriter, node.getLoc(), inputType, input, p.threshold, p.reset,
                                p.detach, p.surrogate, p.alpha);
    } else if (type == "LIFNode") {
      result = LIFNodeOp::create(rewriter, node.getLoc(), inputType, input, p.tau,
                                 p.decayInput, p.threshold, p.reset, p.detach, p.surrogate,
                                 p.alpha);
    } else {
      Value w = node.getInputs()[1];
      auto wType = dyn_cast<RankedTensorType>(w.getType());
      if (!wType || wType.getRank() != 0 || !wType.getElementType().isF32())
        return errors.report(node, "w must be a float32 scalar");
      result = PLIFNodeOp::create(rewriter, node.getLoc(), inputType, input, w, p.decayInput,
                                  p.threshold, p.reset, p.detach, p.surrogate, p.alpha);
    }
    rewriter.replaceOp(node, result);
    return success();
  }

  ErrorState &errors;
};

/// Add/Mul of time-major tensors and the ReduceMean readout over T.
struct TimeMajorOpPattern : OpRewritePattern<ONNXNodeOp> {
  TimeMajorOpPattern(MLIRContext *context, ErrorState &errors)
      : OpRewritePattern(context), errors(errors) {}

  LogicalResult matchAndRewrite(ONNXNodeOp node, PatternRewriter &rewriter) const override {
    StringRef type = node.getOpType();
    if (!node.getDomain().empty() ||
        !llvm::is_contained({"Add", "Mul", "ReduceMean", "Identity"}, type))
      return failure();
    if (failed(checkArity(node, errors)))
      return failure();
    auto inputs = node.getInputs();
    auto ranked = [](Value v) { return isa<RankedTensorType>(v.getType()); };
    if (!llvm::all_of(inputs, ranked))
      return failure(); // a producer is not legalized yet
    Value result;
    if (type == "Add" || type == "Mul") {
      if (inputs[0].getType() != inputs[1].getType() ||
          cast<RankedTensorType>(inputs[0].getType()).getRank() < 2)
        return errors.report(node, llvm::formatv("operands must be time-major tensors of "
                                                 "one type, got {0} and {1}",
                                                 inputs[0].getType(), inputs[1].getType()));
      result = type == "Add"
                   ? AddOp::create(rewriter, node.getLoc(), inputs[0], inputs[1]).getResult()
                   : MulOp::create(rewriter, node.getLoc(), inputs[0], inputs[1]).getResult();
    } else if (type == "ReduceMean") {
      AttrReader attrs(node, errors);
      SmallVector<int64_t> axes = attrs.getInts("axes", {});
      int64_t keepdims = attrs.getInt("keepdims", 1);
      if (attrs.failed())
        return failure();
      if (axes != SmallVector<int64_t>{0} || keepdims != 0)
        return errors.report(node, "only the readout over T, ReduceMean(axes=[0], "
                                   "keepdims=0), is supported");
      result = MeanTimeOp::create(rewriter, node.getLoc(), inputs[0]);
    } else {
      result = inputs[0];
    }
    rewriter.replaceOp(node, result);
    return success();
  }

  ErrorState &errors;
};

/// Explains why a node survived legalization.
void reportLeftover(ONNXNodeOp node) {
  InFlightDiagnostic diag = node.emitError();
  diag << "ONNX node '" << nodeName(node) << "' (" << node.getOpType() << "): ";
  if (std::string arity = arityError(node); !arity.empty())
    diag << arity;
  else if (isNode(node, "Reshape"))
    diag << "not part of a [T, N, ...] <-> [T*N, ...] fold of a stateless layer";
  else if (StepPlanner::isStepOp(node))
    diag << "per-step layer outside a [T*N, ...] fold region";
  else if (node.getDomain().empty())
    diag << "unsupported ONNX op";
  else
    diag << "unsupported op of domain '" << node.getDomain() << "'";
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
    ErrorState errors;
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldRegionPattern, NeuronPattern, TimeMajorOpPattern>(&getContext(), errors);
    GreedyRewriteConfig config;
    config.setUseTopDownTraversal(true);
    config.setMaxIterations(maxIterations);
    // A driver that stops short leaves a half-rewritten function; never pass it on.
    bool converged = succeeded(applyPatternsGreedily(func, std::move(patterns), config));
    if (!converged)
      reportNoConvergence(func, maxIterations);
    if (!converged || errors.failed)
      return signalPassFailure();

    WalkResult leftover = func.walk([](ONNXNodeOp node) {
      reportLeftover(node);
      return WalkResult::interrupt();
    });
    if (leftover.wasInterrupted())
      return signalPassFailure();

    auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
    func.setType(FunctionType::get(&getContext(), func.getArgumentTypes(),
                                   ret.getOperandTypes()));
  }
};

} // namespace
