//===- LegalizeONNX.cpp - --snn-legalize-onnx -----------------------------===//
//
// Rewrites generic `snn.onnx_node` ops into snn ops. The interesting pattern is the fold
// region: SpikingJelly applies a stateless layer to every time step by reshaping
// [T, N, ...] -> [T*N, ...], running the layer, and reshaping back. We recognise the whole
// chain and replace it with time-distributed ops on the time-major tensor, so no later pass
// ever sees the T*N folding. Tracing and planning a region is FoldRegionPlanner's; this file
// holds the patterns, the reporting and the pass.
//
// Diagnostics come from two walks, never from a pattern: the greedy driver may try a pattern
// on the same op many times (once per iteration it is revisited), and a pattern that reported
// printed its error once per try. Before any rewrite, every node is validated once (its kind,
// inputs, outputs and attributes: ONNXNodeReader). After the driver, each node left over that
// does not merely consume another leftover is explained once, by the same planning code the
// patterns ran silently (shapes: the snn ops' own inference, called so that it can fail).
//
//===----------------------------------------------------------------------===//
#include "snn/Conversion/ONNXToSNN/ONNXToSNN.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/FormatVariadic.h"

#include "snn/Dialect/SNN/IR/SNNDialect.h"
#include "snn/Dialect/SNN/IR/SNNOps.h"

#include "DeclaredTypes.h"
#include "FoldRegionPlanner.h"
#include "ONNXNodeReader.h"

namespace snn {
#define GEN_PASS_DEF_LEGALIZEONNX
#include "snn/Conversion/Passes.h.inc"
} // namespace snn

using namespace mlir;
using namespace snn;

namespace {

using namespace snn::legalize;

// --- Fold regions: the rewrite of a planned region (FoldRegionPlanner) ------------------------

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
    if (type == profile::op::kIFNode) {
      result = IFNodeOp::create(rewriter, node.getLoc(), plan->inputType, input, p.threshold,
                                p.reset, p.detach, p.surrogate, p.alpha, p.beta);
    } else if (type == profile::op::kLIFNode) {
      result = LIFNodeOp::create(rewriter, node.getLoc(), plan->inputType, input, p.tau,
                                 p.decayInput, p.threshold, p.reset, p.detach, p.surrogate,
                                 p.alpha, p.beta);
    } else {
      result = PLIFNodeOp::create(rewriter, node.getLoc(), plan->inputType, input,
                                  node.getInputs()[1], p.decayInput, p.threshold, p.reset,
                                  p.detach, p.surrogate, p.alpha, p.beta);
    }
    rewriter.replaceOp(node, result);
    return success();
  }
};

/// A described neuron's op, planned: its attributes and input type.
struct DescribedNeuronPlan {
  DescribedNeuronParams params;
  RankedTensorType inputType;
};

bool isRecurrentNeuron(Operation *op) {
  return isNode(op, profile::op::kRecurrentNeuron, kNeuronDomain);
}

bool isDescribedNeuron(Operation *op) {
  return isNode(op, profile::op::kNeuron, kNeuronDomain) || isRecurrentNeuron(op);
}

/// A recurrent neuron's input is [T, N, F], its feedback weight [F, F] and bias [F].
LogicalResult checkFeedback(ONNXNodeOp node, RankedTensorType input, NodeErrors &errors) {
  if (input.getRank() != 3)
    return errors.report(node, llvm::formatv("input must be [T, N, F] features, got {0}", input));
  int64_t features = input.getDimSize(2);
  auto weight = dyn_cast<RankedTensorType>(node.getInputs()[1].getType());
  auto bias = dyn_cast<RankedTensorType>(node.getInputs()[2].getType());
  if (!weight || !weight.getElementType().isF32() || weight.getRank() != 2 ||
      weight.getDimSize(0) != features || weight.getDimSize(1) != features)
    return errors.report(node, llvm::formatv("the feedback weight (input #1) must be a float32 "
                                             "[{0}, {0}], got {1}",
                                             features, node.getInputs()[1].getType()));
  if (!bias || !bias.getElementType().isF32() || bias.getRank() != 1 ||
      bias.getDimSize(0) != features)
    return errors.report(node, llvm::formatv("the feedback bias (input #2) must be a float32 "
                                             "[{0}], got {1}",
                                             features, node.getInputs()[2].getType()));
  return success();
}

FailureOr<DescribedNeuronPlan> planDescribedNeuron(ONNXNodeOp node, Builder &builder,
                                                   NodeErrors &errors) {
  auto params = readDescribedNeuron(node, builder, errors);
  if (failed(params))
    return failure();
  auto inputType = timeMajorInput(node, node.getInputs()[0], errors);
  if (failed(inputType))
    return failure();
  size_t leading = 1;
  if (isRecurrentNeuron(node)) {
    if (failed(checkFeedback(node, *inputType, errors)))
      return failure();
    leading = 3;
  }
  for (auto [index, operand] : llvm::enumerate(node.getInputs().drop_front(leading))) {
    auto type = dyn_cast<RankedTensorType>(operand.getType());
    if (!type || !type.getElementType().isF32())
      return errors.report(node,
                           llvm::formatv("operand '{0}' (input #{1}) must be a float32 "
                                         "tensor, got {2}",
                                         cast<StringAttr>(params->operandNames[index]).getValue(),
                                         index + leading, operand.getType()));
  }
  return DescribedNeuronPlan{*params, *inputType};
}

/// spikemesh.Neuron -> snn.neuron, spikemesh.RecurrentNeuron -> snn.recurrent_neuron.
struct DescribedNeuronPattern : OpRewritePattern<ONNXNodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ONNXNodeOp node, PatternRewriter &rewriter) const override {
    if (!isDescribedNeuron(node))
      return failure();
    NodeErrors errors = NodeErrors::silent();
    auto plan = planDescribedNeuron(node, rewriter, errors);
    if (failed(plan))
      return rewriter.notifyMatchFailure(node, "input not legalized yet, or invalid");
    const DescribedNeuronParams &p = plan->params;
    ValueRange in = node.getInputs();
    Value result =
        isRecurrentNeuron(node)
            ? Value(RecurrentNeuronOp::create(rewriter, node.getLoc(), plan->inputType, in[0],
                                              in[1], in[2], in.drop_front(3), p.states,
                                              p.constants, p.operandNames, p.charge, p.fire,
                                              p.reset, p.detach, p.update, p.output, p.surrogate,
                                              p.alpha, p.beta))
            : Value(NeuronOp::create(rewriter, node.getLoc(), plan->inputType, in[0],
                                     in.drop_front(), p.states, p.constants, p.operandNames,
                                     p.charge, p.fire, p.reset, p.detach, p.update, p.output,
                                     p.surrogate, p.alpha, p.beta));
    rewriter.replaceOp(node, result);
    return success();
  }
};

/// A parallel spiking neuron's op, planned: its attributes and input type.
struct ParallelNeuronPlan {
  ParallelNeuronParams params;
  RankedTensorType inputType;
};

bool isParallelNeuron(Operation *op) {
  return isNode(op, profile::op::kParallelSpikingNeuron, kNeuronDomain);
}

/// `operand` (weight or bias) is a float32 tensor of `shape`, `shapeText` in errors.
LogicalResult checkParallelOperand(ONNXNodeOp node, Value operand, StringRef what,
                                   ArrayRef<int64_t> shape, const Twine &shapeText,
                                   NodeErrors &errors) {
  auto type = dyn_cast<RankedTensorType>(operand.getType());
  if (!type || !type.getElementType().isF32() || type.getShape() != shape)
    return errors.report(node, what + " must be float32 " + shapeText + ", got " +
                                   typeText(operand.getType()));
  return success();
}

FailureOr<ParallelNeuronPlan> planParallelNeuron(ONNXNodeOp node, Builder &builder,
                                                 NodeErrors &errors) {
  auto params = readParallelNeuron(node, builder, errors);
  if (failed(params))
    return failure();
  auto inputType = timeMajorInput(node, node.getInputs()[0], errors);
  if (failed(inputType))
    return failure();
  int64_t steps = inputType->getDimSize(0);
  if (ShapedType::isDynamic(steps))
    return errors.report(node, "input must have a static number of time steps (dim 0)");
  if (params->k && params->k.getInt() > steps)
    return errors.report(
        node, llvm::formatv("k must be at most T = {0}, got {1}", steps, params->k.getInt()));
  // SpikingJelly's shapes: SlidingPSN's k weights and scalar bias, the others' [T, T], [T, 1].
  bool sliding = params->variant.getValue() == ParallelVariant::sliding;
  SmallVector<int64_t> weight =
      sliding ? SmallVector<int64_t>{params->k.getInt()} : SmallVector<int64_t>{steps, steps};
  SmallVector<int64_t> bias = sliding ? SmallVector<int64_t>{} : SmallVector<int64_t>{steps, 1};
  if (failed(checkParallelOperand(node, node.getInputs()[1], "weight", weight,
                                  (sliding ? "[k] = " : "[T, T] = ") + formatInts(weight),
                                  errors)) ||
      failed(checkParallelOperand(node, node.getInputs()[2], "bias", bias,
                                  sliding ? "[] (a scalar)" : "[T, 1] = " + formatInts(bias),
                                  errors)))
    return failure();
  return ParallelNeuronPlan{*params, *inputType};
}

/// spikemesh.ParallelSpikingNeuron -> snn.parallel_neuron.
struct ParallelNeuronPattern : OpRewritePattern<ONNXNodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ONNXNodeOp node, PatternRewriter &rewriter) const override {
    if (!isParallelNeuron(node))
      return failure();
    NodeErrors errors = NodeErrors::silent();
    auto plan = planParallelNeuron(node, rewriter, errors);
    if (failed(plan))
      return rewriter.notifyMatchFailure(node, "input not legalized yet, or invalid");
    const ParallelNeuronParams &p = plan->params;
    auto inputs = node.getInputs();
    Value result =
        ParallelNeuronOp::create(rewriter, node.getLoc(), plan->inputType, inputs[0], inputs[1],
                                 inputs[2], p.variant, p.k, p.lambda, p.surrogate, p.alpha, p.beta);
    rewriter.replaceOp(node, result);
    return success();
  }
};

bool isTimeMajorOp(ONNXNodeOp node) {
  if (node.getDomain() == kNeuronDomain)
    return node.getOpType() == profile::op::kSpikingAttention;
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
  FailureOr<SmallVector<Type, 1>> types = inferResultTypes<OpTy>(node, state, errors);
  if (failed(types))
    return failure();
  return types->front();
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
  if (node.getOpType() == profile::op::kSpikingAttention) {
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
  if (type == "ReduceMean" || type == profile::op::kSpikingAttention)
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
  if (node.getOpType() == profile::op::kSpikingAttention) {
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
    else if (type == "ReduceMean" || type == profile::op::kSpikingAttention)
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
  else if (isStepOp(node))
    (void)errors.report(node, "per-step layer outside a [T*N, ...] fold region");
  else if (isNeuronNode(node))
    (void)planNeuron(node, builder, errors);
  else if (isDescribedNeuron(node))
    (void)planDescribedNeuron(node, builder, errors);
  else if (isParallelNeuron(node))
    (void)planParallelNeuron(node, builder, errors);
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
    patterns.add<FoldRegionPattern, NeuronPattern, DescribedNeuronPattern, ParallelNeuronPattern,
                 TimeMajorOpPattern>(&getContext());
    GreedyRewriteConfig config;
    config.setUseTopDownTraversal(true);
    config.setMaxIterations(maxIterations);
    // A driver that stops short leaves a half-rewritten function; never pass it on.
    if (failed(applyPatternsGreedily(func, std::move(patterns), config))) {
      reportNoConvergence(func, maxIterations);
      return signalPassFailure();
    }
    if (reportLeftovers(func) || reportDeclaredTypeConflicts(func))
      return signalPassFailure();

    auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
    func.setType(FunctionType::get(&getContext(), func.getArgumentTypes(),
                                   ret.getOperandTypes()));
  }
};

} // namespace
