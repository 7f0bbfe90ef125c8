//===- ONNXNodeParams.cpp - Checked parameters of each ONNX node kind -----===//
//
// One reader per node kind: the parameters its snn op needs, or an error per problem naming
// the node. validateNode runs them once per node (emitting); the patterns run them again
// silently to build the ops, so the rules cannot disagree.
//
//===----------------------------------------------------------------------===//
#include "ONNXNodeReader.h"

#include "snn/Schema/NeuronProgram.h"
#include "snn/Schema/Surrogates.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace snn::legalize {

// --- Windows: Conv, MaxPool, AveragePool ------------------------------------------------------

/// Checks that `values` are `count` integers, each >= `minimum` (0 or 1).
static LogicalResult checkInts(ONNXNodeOp node, NodeErrors &errors, StringRef name,
                               ArrayRef<int64_t> values, size_t count, int64_t minimum) {
  if (values.size() == count && llvm::all_of(values, [&](int64_t v) { return v >= minimum; }))
    return success();
  return errors.report(node, llvm::formatv("attribute '{0}' must be {1} {2} integers, got {3}",
                                           name, count, minimum > 0 ? "positive" : "non-negative",
                                           formatInts(values)));
}

/// The window's numbers, once their kinds are right.
static LogicalResult checkWindow(ONNXNodeOp node, NodeErrors &errors, const Window &window,
                                 ArrayRef<int64_t> pads) {
  StringRef type = node.getOpType();
  if (type != "Conv" && !node.getOnnxAttrs().get("kernel_shape"))
    return errors.report(node, "missing required attribute 'kernel_shape'");
  if (((type != "Conv" || !window.kernel.empty()) &&
       failed(checkInts(node, errors, "kernel_shape", window.kernel, 2, 1))) ||
      failed(checkInts(node, errors, "strides", window.strides, 2, 1)) ||
      failed(checkInts(node, errors, "dilations", window.dilations, 2, 1)) ||
      failed(checkInts(node, errors, "pads", pads, 4, 0)))
    return failure();
  // ONNX pads are [begin_h, begin_w, end_h, end_w]; PyTorch only pads symmetrically.
  if (pads[0] != pads[2] || pads[1] != pads[3])
    return errors.report(node, "only symmetric 2-D padding is supported, got pads " +
                                   formatInts(pads));
  if (type == "AveragePool" && window.dilations != SmallVector<int64_t>{1, 1})
    return errors.report(node, "AveragePool with dilations other than 1 is not supported");
  return success();
}

FailureOr<Window> readWindow(ONNXNodeOp node, NodeErrors &errors) {
  StringRef type = node.getOpType();
  AttrReader attrs(node, errors);
  Window window;
  window.kernel = attrs.getInts("kernel_shape", {});
  window.strides = attrs.getInts("strides", {1, 1});
  SmallVector<int64_t> pads = attrs.getInts("pads", {0, 0, 0, 0});
  window.dilations = attrs.getInts("dilations", {1, 1});
  StringRef autoPad = attrs.getString("auto_pad", "NOTSET");
  if (type != "Conv")
    window.ceilMode = attrs.getFlag("ceil_mode", false);
  if (type == "AveragePool")
    window.countIncludePad = attrs.getFlag("count_include_pad", false);
  int64_t storageOrder = type == "MaxPool" ? attrs.getInt("storage_order", 0) : 0;
  if (attrs.failed())
    return failure();
  if (autoPad != "NOTSET")
    return errors.report(node, "auto_pad '" + autoPad + "' is not supported");
  if (storageOrder != 0)
    return errors.report(node, "storage_order=" + Twine(storageOrder) + " is not supported");
  if (failed(checkWindow(node, errors, window, pads)))
    return failure();
  window.pads = {pads[0], pads[1]};
  return window;
}

FailureOr<std::pair<Window, int64_t>> readConv(ONNXNodeOp node, NodeErrors &errors) {
  AttrReader attrs(node, errors);
  int64_t group = attrs.getInt("group", 1);
  auto window = readWindow(node, errors);
  if (attrs.failed() || failed(window))
    return failure();
  if (group < 1)
    return errors.report(node, "attribute 'group' must be positive, got " + Twine(group));
  // kernel_shape is optional in ONNX; when given it must be the weight's.
  auto weight = dyn_cast<RankedTensorType>(node.getInputs()[1].getType());
  if (!window->kernel.empty() && weight && weight.getRank() == 4 &&
      ArrayRef<int64_t>(window->kernel) != weight.getShape().drop_front(2))
    return errors.report(node, llvm::formatv("kernel_shape {0} does not match the weight's "
                                             "spatial dims {1}",
                                             formatInts(window->kernel),
                                             formatInts(weight.getShape().drop_front(2))));
  return std::make_pair(std::move(*window), group);
}

// --- Other per-step layers --------------------------------------------------------------------

LogicalResult readGemm(ONNXNodeOp node, NodeErrors &errors) {
  AttrReader attrs(node, errors);
  int64_t transA = attrs.getInt("transA", 0), transB = attrs.getInt("transB", 0);
  float alpha = attrs.getFloat("alpha", 1.0f), beta = attrs.getFloat("beta", 1.0f);
  if (attrs.failed())
    return failure();
  if (transA != 0 || transB != 1 || alpha != 1.0f || beta != 1.0f)
    return errors.report(node, llvm::formatv("only Gemm with transB=1, transA=0, alpha=beta=1 "
                                             "(Linear), got transB={0}, transA={1}, alpha={2}, "
                                             "beta={3}",
                                             transB, transA, formatFloat(alpha),
                                             formatFloat(beta)));
  return success();
}

FailureOr<BatchNormParams> readBatchNorm(ONNXNodeOp node, NodeErrors &errors) {
  AttrReader attrs(node, errors);
  float epsilon = attrs.getFloat("epsilon", 1e-5f);
  float momentum = attrs.getFloat("momentum", 0.9f);
  bool training = attrs.getFlag("training_mode", false);
  if (attrs.failed())
    return failure();
  if (training)
    return errors.report(node, "training_mode=1 is not supported (inference form only)");
  if (!(epsilon > 0.0f) || !std::isfinite(epsilon))
    return errors.report(node, "attribute 'epsilon' must be finite and > 0, got " +
                                   formatFloat(epsilon));
  if (!(momentum >= 0.0f && momentum <= 1.0f))
    return errors.report(node, "attribute 'momentum' must be in [0, 1], got " +
                                   formatFloat(momentum));
  return BatchNormParams{epsilon, pytorchMomentum(momentum)};
}

LogicalResult readFlatten(ONNXNodeOp node, NodeErrors &errors) {
  AttrReader attrs(node, errors);
  int64_t axis = attrs.getInt("axis", 1);
  if (attrs.failed())
    return failure();
  if (axis != 1)
    return errors.report(node, "only Flatten(axis=1) of a folded tensor is supported, got "
                               "axis=" + Twine(axis));
  return success();
}

FailureOr<float> readDropout(ONNXNodeOp node, NodeErrors &errors) {
  AttrReader attrs(node, errors);
  attrs.getInt("seed", 0); // unused in inference; type-checked only
  if (attrs.failed())
    return failure();
  auto inputs = node.getInputs();
  if (inputs.size() < 2)
    return 0.5f; // ONNX's default ratio
  auto param = inputs[1].getDefiningOp<ParameterOp>();
  auto value = param ? dyn_cast<DenseFPElementsAttr>(param.getValue()) : nullptr;
  if (!value || value.getNumElements() != 1 || !value.getElementType().isF32())
    return errors.report(node, "Dropout ratio must be a constant float32 scalar");
  float ratio = *value.getValues<float>().begin();
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return errors.report(node, "Dropout ratio must be in [0, 1), got " + formatFloat(ratio));
  return ratio;
}

FailureOr<SmallVector<int64_t>> readAdaptiveAvgPool(ONNXNodeOp node, NodeErrors &errors) {
  AttrReader attrs(node, errors);
  SmallVector<int64_t> size = attrs.getInts(profile::attr::kOutputSize, {});
  if (attrs.failed())
    return failure();
  if (size.size() != 2 || size[0] <= 0 || size[1] <= 0)
    return errors.report(node, Twine(profile::attr::kOutputSize) +
                                   " must be 2 positive integers, got " + formatInts(size));
  return size;
}

FailureOr<GroupNormParams> readGroupNorm(ONNXNodeOp node, NodeErrors &errors) {
  AttrReader attrs(node, errors);
  int64_t groups = attrs.getInt(profile::attr::kNumGroups, 0);
  float epsilon = attrs.getFloat(profile::attr::kEpsilon, 1e-5f);
  if (attrs.failed())
    return failure();
  if (groups < 1)
    return errors.report(node, "attribute '" + Twine(profile::attr::kNumGroups) +
                                   "' must be >= 1, got " + Twine(groups));
  if (!(std::isfinite(epsilon) && epsilon > 0.0f))
    return errors.report(node, "attribute '" + Twine(profile::attr::kEpsilon) +
                                   "' must be finite and > 0, got " + formatFloat(epsilon));
  return GroupNormParams{groups, epsilon};
}

FailureOr<int64_t> readConcat(ONNXNodeOp node, NodeErrors &errors) {
  AttrReader attrs(node, errors);
  int64_t axis = attrs.getInt("axis", -1);
  if (attrs.failed())
    return failure();
  if (axis < 2)
    return errors.report(node, "attribute 'axis' must be a per-step dim of the time-major "
                               "operands (>= 2: not T or N), got " + Twine(axis));
  return axis;
}

LogicalResult readReduceSum(ONNXNodeOp node, NodeErrors &errors) {
  AttrReader attrs(node, errors);
  int64_t keepdims = attrs.getInt("keepdims", 1);
  attrs.getFlag("noop_with_empty_axes", false); // irrelevant with axes [0]; type-checked only
  if (attrs.failed())
    return failure();
  std::optional<SmallVector<int64_t>> axes = constantInts(node.getInputs()[1]);
  if (!axes || *axes != SmallVector<int64_t>{0} || keepdims != 0)
    return errors.report(node, "only the readout over T, ReduceSum(axes=[0] constant, "
                               "keepdims=0), is supported");
  return success();
}

FailureOr<ReduceMeanParams> readReduceMean(ONNXNodeOp node, NodeErrors &errors) {
  AttrReader attrs(node, errors);
  SmallVector<int64_t> axes = attrs.getInts("axes", {});
  bool keepdims = attrs.getFlag("keepdims", true);
  attrs.getFlag("noop_with_empty_axes", false); // irrelevant with explicit axes; type-checked
  if (attrs.failed())
    return failure();
  if (axes == SmallVector<int64_t>{0} && !keepdims)
    return ReduceMeanParams{/*overTime=*/true, std::move(axes), false};
  bool perStep = !axes.empty() && llvm::all_of(axes, [](int64_t a) { return a >= 2; }) &&
                 llvm::is_sorted(axes) &&
                 std::adjacent_find(axes.begin(), axes.end()) == axes.end();
  if (!perStep)
    return errors.report(node, "ReduceMean is supported as the readout over T (axes=[0], "
                               "keepdims=0) or over ascending per-step dims (every axis >= 2), "
                               "got axes " + formatInts(axes));
  return ReduceMeanParams{/*overTime=*/false, std::move(axes), keepdims};
}

FailureOr<SpikingAttentionParams> readSpikingAttention(ONNXNodeOp node, NodeErrors &errors) {
  AttrReader attrs(node, errors);
  int64_t heads = attrs.getInt(profile::attr::kNumHeads, 0);
  std::optional<float> scale = attrs.getOptionalFloat(profile::attr::kScale);
  if (attrs.failed())
    return failure();
  if (heads < 1)
    return errors.report(node, "attribute '" + Twine(profile::attr::kNumHeads) +
                                   "' must be given and >= 1, got " + Twine(heads));
  if (!scale || !std::isfinite(*scale))
    return errors.report(node, "attribute '" + Twine(profile::attr::kScale) +
                                   "' must be given and finite" +
                                   (scale ? ", got " + formatFloat(*scale) : std::string()));
  return SpikingAttentionParams{heads, *scale};
}

FailureOr<SmallVector<int64_t>> readReshape(ONNXNodeOp node, NodeErrors &errors) {
  AttrReader attrs(node, errors);
  // The fold and unfold shapes have no 0 entries, where allowzero would matter.
  attrs.getFlag("allowzero", false);
  if (attrs.failed())
    return failure();
  Value shape = node.getInputs()[1];
  auto type = dyn_cast<RankedTensorType>(shape.getType());
  std::optional<SmallVector<int64_t>> values = constantInts(shape);
  if (!values || !type || type.getRank() != 1)
    return errors.report(node, llvm::formatv("shape (input #1) must be a constant 1-D int64 "
                                             "tensor, got {0}{1}",
                                             values ? "a constant " : "a computed ",
                                             shape.getType()));
  return std::move(*values);
}

// --- Neurons ----------------------------------------------------------------------------------

/// The numbers of a neuron: one error per bad one.
static LogicalResult checkNeuronValues(ONNXNodeOp node, NodeErrors &errors, float threshold,
                                       std::optional<float> reset, float tau) {
  bool ok = true;
  auto check = [&](bool good, const Twine &message) {
    if (!good)
      ok = false, (void)errors.report(node, message);
  };
  using namespace profile::attr;
  auto attribute = [](const char *name) { return "attribute '" + std::string(name) + "'"; };
  check(std::isfinite(threshold),
        attribute(kVThreshold) + " must be finite, got " + formatFloat(threshold));
  check(!reset || std::isfinite(*reset),
        attribute(kVReset) + " must be finite, got " + formatFloat(reset.value_or(0.0f)));
  check(tau > 1.0f && std::isfinite(tau),
        std::string(kTau) + " must be finite and > 1, got " + formatFloat(tau));
  if (node.getOpType() == profile::op::kParametricLIFNode) {
    auto w = dyn_cast<RankedTensorType>(node.getInputs()[1].getType());
    check(w && w.getRank() == 0 && w.getElementType().isF32(),
          "w (input #1) must be a float32 scalar, got " +
              llvm::formatv("{0}", node.getInputs()[1].getType()).str());
  }
  return success(ok);
}

namespace {

/// A neuron's surrogate and its parameters, checked against the surrogate table.
struct SurrogateParams {
  SurrogateKindAttr kind;
  FloatAttr alpha, beta; // beta: null for a surrogate without one
};

FailureOr<SurrogateParams> readSurrogate(ONNXNodeOp node, AttrReader &attrs, Builder &builder,
                                         NodeErrors &errors) {
  using namespace profile::attr;
  StringRef surrogateName = attrs.getString(kSurrogate, "sigmoid");
  std::optional<float> alpha = attrs.getOptionalFloat(kAlpha);
  std::optional<float> beta = attrs.getOptionalFloat(kBeta);
  if (attrs.failed())
    return failure();
  const schema::SurrogateSpec *spec = schema::findSurrogate(surrogateName);
  if (!spec)
    return errors.report(node, "unknown surrogate '" + surrogateName + "' (expected one of " +
                                   schema::surrogateNames() + ")");
  std::optional<SurrogateKind> surrogate = symbolizeSurrogateKind(spec->name);
  if (!surrogate)
    return errors.report(node, "surrogate '" + surrogateName + "' has no snn dialect kind");
  if (beta && !spec->hasBeta())
    return errors.report(node, "attribute '" + std::string(kBeta) + "': the " + spec->name +
                                   " surrogate takes no beta");
  float alphaValue = alpha.value_or(spec->alpha.defaultValue);
  float betaValue = beta.value_or(spec->beta.defaultValue);
  if (std::string error = schema::surrogateParameterError(*spec, alphaValue, betaValue);
      !error.empty())
    return errors.report(node, error);
  SurrogateParams params;
  params.kind = SurrogateKindAttr::get(builder.getContext(), *surrogate);
  params.alpha = builder.getF32FloatAttr(alphaValue);
  if (spec->hasBeta())
    params.beta = builder.getF32FloatAttr(betaValue);
  return params;
}

} // namespace

FailureOr<NeuronParams> readNeuron(ONNXNodeOp node, Builder &builder, NodeErrors &errors) {
  StringRef type = node.getOpType();
  AttrReader attrs(node, errors);
  using namespace profile::attr;
  namespace op = profile::op;
  float threshold = attrs.getFloat(kVThreshold, 1.0f);
  std::optional<float> reset = attrs.getOptionalFloat(kVReset);
  bool detach = attrs.getFlag(kDetachReset, false);
  bool decayInput = type != op::kIFNode && attrs.getFlag(kDecayInput, true);
  float tau = type == op::kLIFNode ? attrs.getFloat(kTau, 2.0f) : 2.0f;
  if (type == op::kParametricLIFNode)
    attrs.getOptionalFloat(kInitTau); // informational; type-checked only
  // The surrogate's attributes are read (and reported) too when others failed already.
  FailureOr<SurrogateParams> surrogate = readSurrogate(node, attrs, builder, errors);
  if (failed(surrogate) || failed(checkNeuronValues(node, errors, threshold, reset, tau)))
    return failure();

  NeuronParams params;
  params.threshold = builder.getF32FloatAttr(threshold);
  if (reset)
    params.reset = builder.getF32FloatAttr(*reset);
  params.alpha = surrogate->alpha;
  params.beta = surrogate->beta;
  params.tau = builder.getF32FloatAttr(tau);
  params.detach = builder.getBoolAttr(detach);
  params.decayInput = builder.getBoolAttr(decayInput);
  params.surrogate = surrogate->kind;
  return params;
}

FailureOr<DescribedNeuronParams> readDescribedNeuron(ONNXNodeOp node, Builder &builder,
                                                     NodeErrors &errors) {
  AttrReader attrs(node, errors);
  using namespace profile::attr;
  schema::NeuronParts parts;
  parts.states = attrs.getStrings(kStates);
  parts.constants = attrs.getStrings(kConstants);
  parts.operands = attrs.getStrings(kOperandNames);
  parts.charge = attrs.getStrings(kCharge);
  parts.update = attrs.getStrings(kUpdate);
  parts.fire = attrs.getString(kFire, "").str();
  parts.reset = attrs.getString(kReset, "hard").str();
  parts.output = attrs.getString(kOutput, "s").str();
  parts.detachReset = attrs.getFlag(kDetachReset, false);
  FailureOr<SurrogateParams> surrogate = readSurrogate(node, attrs, builder, errors);
  if (failed(surrogate))
    return failure();
  schema::NeuronDescriptionResult described = schema::describeNeuron(parts);
  if (!described.error.empty())
    return errors.report(node, described.error);
  size_t leading = node.getOpType() == profile::op::kRecurrentNeuron ? 3 : 1;
  if (parts.operands.size() + leading != node.getInputs().size())
    return errors.report(node, llvm::formatv("{0} operand names for {1} operand inputs",
                                             parts.operands.size(),
                                             node.getInputs().size() - leading));
  schema::NeuronCompileResult compiled = schema::compileNeuron(described.description);
  if (!compiled.error.empty())
    return errors.report(node, compiled.error);
  if (leading == 3)
    if (std::string error = schema::recurrentProgramError(compiled.program); !error.empty())
      return errors.report(node, error);

  auto strings = [&](const std::vector<std::string> &list) {
    SmallVector<Attribute> out;
    for (const std::string &text : list)
      out.push_back(builder.getStringAttr(text));
    return builder.getArrayAttr(out);
  };
  DescribedNeuronParams params;
  params.states = strings(parts.states);
  params.constants = strings(parts.constants);
  params.operandNames = strings(parts.operands);
  params.charge = strings(parts.charge);
  params.update = strings(parts.update);
  if (!parts.fire.empty())
    params.fire = builder.getStringAttr(parts.fire);
  params.reset = builder.getStringAttr(parts.reset);
  params.output = builder.getStringAttr(parts.output);
  params.detach = builder.getBoolAttr(parts.detachReset);
  params.surrogate = surrogate->kind;
  params.alpha = surrogate->alpha;
  params.beta = surrogate->beta;
  return params;
}

FailureOr<ParallelNeuronParams> readParallelNeuron(ONNXNodeOp node, Builder &builder,
                                                   NodeErrors &errors) {
  AttrReader attrs(node, errors);
  using namespace profile::attr;
  StringRef variantName = attrs.getString(kVariant, "");
  bool hasK = bool(node.getOnnxAttrs().get(kK));
  int64_t k = attrs.getInt(kK, 0);
  std::optional<float> lambda = attrs.getOptionalFloat(kLambda);
  // The surrogate's attributes are read (and reported) too when others failed already.
  FailureOr<SurrogateParams> surrogate = readSurrogate(node, attrs, builder, errors);
  if (failed(surrogate) || attrs.failed())
    return failure();
  std::optional<ParallelVariant> variant = symbolizeParallelVariant(variantName);
  if (!variant)
    return errors.report(node, "variant '" + variantName + "' is not psn, masked or sliding");
  bool psn = *variant == ParallelVariant::psn, masked = *variant == ParallelVariant::masked;
  if (psn == hasK)
    return errors.report(node, psn ? Twine("variant psn takes no k")
                                   : "variant " + variantName + " needs k (an integer)");
  if (hasK && k < 1)
    return errors.report(node, "k must be >= 1, got " + std::to_string(k));
  if (masked != lambda.has_value())
    return errors.report(node, masked ? Twine("variant masked needs lambda (a float)")
                                      : "variant " + variantName + " takes no lambda");
  if (lambda && !std::isfinite(*lambda))
    return errors.report(node, "lambda must be finite, got " + formatFloat(*lambda));

  ParallelNeuronParams params;
  params.variant = ParallelVariantAttr::get(builder.getContext(), *variant);
  if (hasK)
    params.k = builder.getI64IntegerAttr(k);
  if (lambda)
    params.lambda = builder.getF32FloatAttr(*lambda);
  params.surrogate = surrogate->kind;
  params.alpha = surrogate->alpha;
  params.beta = surrogate->beta;
  return params;
}

} // namespace snn::legalize
