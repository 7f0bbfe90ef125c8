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

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "snn/Dialect/SNN/IR/SNNOps.h"

namespace snn {
#define GEN_PASS_DEF_LEGALIZEONNX
#include "snn/Dialect/SNN/Transforms/Passes.h.inc"
} // namespace snn

using namespace mlir;
using namespace snn;

namespace {

constexpr StringLiteral kNeuronDomain = "spikemesh";

bool isNode(Operation *op, StringRef opType, StringRef domain = "") {
  auto node = dyn_cast_or_null<ONNXNodeOp>(op);
  return node && node.getOpType() == opType && node.getDomain() == domain;
}

std::string formatFloat(float value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", static_cast<double>(value));
  return buffer;
}

std::string nodeName(Operation *op) {
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    return name.getName().str();
  return "<unnamed>";
}

/// Reports a node the patterns recognised but cannot legalize (bad attribute or operand).
/// Patterns cannot fail a pass on their own, so they record the error here. The greedy driver
/// retries a failed pattern on every iteration, so each node is reported once.
struct ErrorState {
  bool failed = false;
  llvm::DenseSet<Operation *> reported;
  LogicalResult report(ONNXNodeOp node, const Twine &message) {
    failed = true;
    if (reported.insert(node).second)
      node.emitError() << "ONNX node '" << nodeName(node) << "' (" << node.getOpType()
                       << "): " << message;
    return failure();
  }
};

// --- Attribute access with ONNX defaults ------------------------------------------------------

int64_t intAttr(ONNXNodeOp node, StringRef name, int64_t fallback) {
  if (auto attr = node.getOnnxAttrs().getAs<IntegerAttr>(name))
    return attr.getInt();
  return fallback;
}

float floatAttr(ONNXNodeOp node, StringRef name, float fallback) {
  if (auto attr = node.getOnnxAttrs().getAs<FloatAttr>(name))
    return attr.getValueAsDouble();
  return fallback;
}

SmallVector<int64_t> intsAttr(ONNXNodeOp node, StringRef name, ArrayRef<int64_t> fallback) {
  if (auto attr = node.getOnnxAttrs().getAs<DenseI64ArrayAttr>(name))
    return SmallVector<int64_t>(attr.asArrayRef());
  return SmallVector<int64_t>(fallback);
}

std::optional<SmallVector<int64_t>> constantInts(Value value) {
  DenseIntElementsAttr attr;
  if (!matchPattern(value, m_Constant(&attr)))
    return std::nullopt;
  SmallVector<int64_t> result;
  for (const APInt &v : attr.getValues<APInt>())
    result.push_back(v.getSExtValue());
  return result;
}

/// ONNX momentum weights the old statistic; PyTorch's weights the new one, and the exporter
/// wrote float(1 - m) for PyTorch's decimal m. 1 - 0.9f is 0.100000024 and 1 - 0.99f is
/// 0.0099999905, so take the shortest decimal that maps back to the same float.
float pytorchMomentum(float onnxMomentum) {
  double exact = 1.0 - static_cast<double>(onnxMomentum);
  for (int digits = 1; digits < 17; ++digits) {
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%.*e", digits - 1, exact);
    double candidate = std::strtod(buffer, nullptr);
    if (static_cast<float>(1.0 - candidate) == onnxMomentum)
      return static_cast<float>(candidate);
  }
  return static_cast<float>(exact);
}

/// ONNX pads are [begin_h, begin_w, end_h, end_w]; PyTorch only pads symmetrically.
FailureOr<SmallVector<int64_t>> symmetricPads(ONNXNodeOp node, ErrorState &errors) {
  SmallVector<int64_t> pads = intsAttr(node, "pads", {0, 0, 0, 0});
  if (pads.size() != 4 || pads[0] != pads[2] || pads[1] != pads[3])
    return errors.report(node, "only symmetric 2-D padding is supported");
  if (auto autoPad = node.getOnnxAttrs().getAs<StringAttr>("auto_pad");
      autoPad && autoPad.getValue() != "NOTSET")
    return errors.report(node, "auto_pad '" + autoPad.getValue() + "' is not supported");
  return SmallVector<int64_t>{pads[0], pads[1]};
}

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
    auto inputs = node.getInputs();
    if (inputs.size() < 2 || inputs.size() > 3)
      return errors.report(node, "expects 2 or 3 inputs (X, W[, bias])");
    if (intAttr(node, "transA", 0) != 0 || intAttr(node, "transB", 0) != 1 ||
        floatAttr(node, "alpha", 1.0f) != 1.0f || floatAttr(node, "beta", 1.0f) != 1.0f)
      return errors.report(node, "only Gemm with transB=1, transA=0, alpha=beta=1 (Linear)");
    Value bias = inputs.size() > 2 ? inputs[2] : Value();
    return build<LinearOp>(node, input, inputs[1], bias);
  }

  FailureOr<StepState> conv(ONNXNodeOp node, Value input) {
    auto inputs = node.getInputs();
    if (inputs.size() < 2 || inputs.size() > 3)
      return errors.report(node, "expects 2 or 3 inputs (X, W[, B])");
    auto pads = symmetricPads(node, errors);
    if (failed(pads))
      return failure();
    Value bias = inputs.size() > 2 ? inputs[2] : Value();
    return build<Conv2dOp>(node, input, inputs[1], bias,
                           builder.getDenseI64ArrayAttr(intsAttr(node, "strides", {1, 1})),
                           builder.getDenseI64ArrayAttr(*pads),
                           builder.getDenseI64ArrayAttr(intsAttr(node, "dilations", {1, 1})),
                           builder.getI64IntegerAttr(intAttr(node, "group", 1)));
  }

  FailureOr<StepState> batchNorm(ONNXNodeOp node, Value input) {
    auto inputs = node.getInputs();
    if (inputs.size() != 5 || intAttr(node, "training_mode", 0) != 0)
      return errors.report(node, "expected inference-form BatchNormalization with 5 inputs");
    float momentum = pytorchMomentum(floatAttr(node, "momentum", 0.9f));
    return build<BatchNormOp>(node, input, inputs[1], inputs[2], inputs[3], inputs[4],
                              builder.getF32FloatAttr(floatAttr(node, "epsilon", 1e-5f)),
                              builder.getF32FloatAttr(momentum));
  }

  /// kernel_shape is required by ONNX; checked here so the error names the ONNX attribute.
  FailureOr<SmallVector<int64_t>> kernelShape(ONNXNodeOp node) {
    SmallVector<int64_t> kernel = intsAttr(node, "kernel_shape", {});
    if (kernel.size() != 2)
      return errors.report(node, "expects a 2-D kernel_shape");
    return kernel;
  }

  FailureOr<StepState> maxPool(ONNXNodeOp node, Value input) {
    auto kernel = kernelShape(node);
    if (failed(kernel))
      return failure();
    auto pads = symmetricPads(node, errors);
    if (failed(pads))
      return failure();
    if (intAttr(node, "storage_order", 0) != 0)
      return errors.report(node, "storage_order=1 is not supported");
    return build<MaxPool2dOp>(
        node, input, builder.getDenseI64ArrayAttr(*kernel),
        builder.getDenseI64ArrayAttr(intsAttr(node, "strides", {1, 1})),
        builder.getDenseI64ArrayAttr(*pads),
        builder.getBoolAttr(intAttr(node, "ceil_mode", 0) != 0),
        builder.getDenseI64ArrayAttr(intsAttr(node, "dilations", {1, 1})));
  }

  FailureOr<StepState> avgPool(ONNXNodeOp node, Value input) {
    auto kernel = kernelShape(node);
    if (failed(kernel))
      return failure();
    auto pads = symmetricPads(node, errors);
    if (failed(pads))
      return failure();
    return build<AvgPool2dOp>(
        node, input, builder.getDenseI64ArrayAttr(*kernel),
        builder.getDenseI64ArrayAttr(intsAttr(node, "strides", {1, 1})),
        builder.getDenseI64ArrayAttr(*pads),
        builder.getBoolAttr(intAttr(node, "ceil_mode", 0) != 0),
        builder.getBoolAttr(intAttr(node, "count_include_pad", 0) != 0));
  }

  FailureOr<StepState> flatten(ONNXNodeOp node, Value input) {
    if (intAttr(node, "axis", 1) != 1)
      return errors.report(node, "only Flatten(axis=1) of a folded tensor is supported");
    return build<FlattenOp>(node, input);
  }

  FailureOr<StepState> dropout(ONNXNodeOp node, Value input) {
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
    Value input = node.getInputs().empty() ? Value() : node.getInputs()[0];
    auto inputType = input ? dyn_cast<RankedTensorType>(input.getType()) : nullptr;
    if (!inputType)
      return failure(); // its producer is not legalized yet
    if (type == "ParametricLIFNode" && node.getInputs().size() != 2)
      return errors.report(node, "expects the input and the scalar w");

    auto surrogateName = node.getOnnxAttrs().getAs<StringAttr>("surrogate");
    std::optional<SurrogateKind> surrogate =
        symbolizeSurrogateKind(surrogateName ? surrogateName.getValue() : "sigmoid");
    if (!surrogate)
      return errors.report(node, "unknown surrogate '" + surrogateName.getValue() +
                                     "' (expected sigmoid or atan)");
    float alpha = floatAttr(node, "alpha", *surrogate == SurrogateKind::atan ? 2.0f : 4.0f);
    FloatAttr vReset;
    if (auto reset = node.getOnnxAttrs().getAs<FloatAttr>("v_reset"))
      vReset = rewriter.getF32FloatAttr(reset.getValueAsDouble());
    auto threshold = rewriter.getF32FloatAttr(floatAttr(node, "v_threshold", 1.0f));
    auto detach = rewriter.getBoolAttr(intAttr(node, "detach_reset", 0) != 0);
    auto surrogateAttr = SurrogateKindAttr::get(getContext(), *surrogate);
    auto alphaAttr = rewriter.getF32FloatAttr(alpha);
    auto decayInput = rewriter.getBoolAttr(intAttr(node, "decay_input", 1) != 0);

    Value result;
    if (type == "IFNode") {
      result = IFNodeOp::create(rewriter, node.getLoc(), inputType, input, threshold, vReset,
                                detach, surrogateAttr, alphaAttr);
    } else if (type == "LIFNode") {
      float tau = floatAttr(node, "tau", 2.0f);
      if (!(tau > 1.0f))
        return errors.report(node, "tau must be > 1, got " + formatFloat(tau));
      result = LIFNodeOp::create(rewriter, node.getLoc(), inputType, input,
                                 rewriter.getF32FloatAttr(tau), decayInput, threshold, vReset,
                                 detach, surrogateAttr, alphaAttr);
    } else {
      Value w = node.getInputs()[1];
      auto wType = dyn_cast<RankedTensorType>(w.getType());
      if (!wType || wType.getRank() != 0)
        return errors.report(node, "w must be a float32 scalar");
      result = PLIFNodeOp::create(rewriter, node.getLoc(), inputType, input, w, decayInput,
                                  threshold, vReset, detach, surrogateAttr, alphaAttr);
    }
    rewriter.replaceOp(node, result);
    return success();
  }

  ErrorState &errors;
};

/// Add/Mul of time-major tensors and the ReduceMean readout over T.
struct TimeMajorOpPattern : OpRewritePattern<ONNXNodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ONNXNodeOp node, PatternRewriter &rewriter) const override {
    if (!node.getDomain().empty())
      return failure();
    auto inputs = node.getInputs();
    auto ranked = [](Value v) { return isa<RankedTensorType>(v.getType()); };
    if (inputs.empty() || !llvm::all_of(inputs, ranked))
      return failure();
    StringRef type = node.getOpType();
    if ((type == "Add" || type == "Mul") && inputs.size() == 2 &&
        inputs[0].getType() == inputs[1].getType() &&
        cast<RankedTensorType>(inputs[0].getType()).getRank() >= 2) {
      Value result = type == "Add"
                         ? AddOp::create(rewriter, node.getLoc(), inputs[0], inputs[1]).getResult()
                         : MulOp::create(rewriter, node.getLoc(), inputs[0], inputs[1]).getResult();
      rewriter.replaceOp(node, result);
      return success();
    }
    if (type == "ReduceMean" && intsAttr(node, "axes", {}) == SmallVector<int64_t>{0} &&
        intAttr(node, "keepdims", 1) == 0) {
      rewriter.replaceOp(node, MeanTimeOp::create(rewriter, node.getLoc(), inputs[0]));
      return success();
    }
    if (type == "Identity") {
      rewriter.replaceOp(node, inputs[0]);
      return success();
    }
    return failure();
  }
};

/// Explains why a node survived legalization.
void reportLeftover(ONNXNodeOp node) {
  InFlightDiagnostic diag = node.emitError();
  diag << "ONNX node '" << nodeName(node) << "' (" << node.getOpType() << "): ";
  if (isNode(node, "Reshape"))
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
    patterns.add<FoldRegionPattern, NeuronPattern>(&getContext(), errors);
    patterns.add<TimeMajorOpPattern>(&getContext());
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
