//===- ONNXNodeReader.cpp - Reading ONNX nodes for LegalizeONNX -----------===//
//
// The generic half: errors, typed attribute reads, the table of node kinds and validateNode.
// The per-kind readers are in ONNXNodeParams.cpp.
//
//===----------------------------------------------------------------------===//
#include "ONNXNodeReader.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstdio>
#include <cstdlib>

using namespace mlir;

namespace snn::legalize {

LogicalResult NodeErrors::report(ONNXNodeOp node, const Twine &message) {
  failedAny = true;
  if (emit)
    node.emitError() << "ONNX node '" << nodeName(node) << "' (" << node.getOpType()
                     << "): " << message;
  return failure();
}

bool isNode(Operation *op, StringRef opType, StringRef domain) {
  auto node = dyn_cast_or_null<ONNXNodeOp>(op);
  return node && node.getOpType() == opType && node.getDomain() == domain;
}

bool isNeuronNode(Operation *op) {
  auto node = dyn_cast_or_null<ONNXNodeOp>(op);
  return node && node.getDomain() == kNeuronDomain && profile::isNeuron(node.getOpType());
}

std::string formatFloat(float value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", static_cast<double>(value));
  return buffer;
}

std::string formatInts(ArrayRef<int64_t> values) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << '[';
  llvm::interleaveComma(values, os);
  os << ']';
  return text;
}

std::string typeText(Type type) { return llvm::formatv("{0}", type).str(); }

std::string nodeName(Operation *op) {
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    return name.getName().str();
  return "<unnamed>";
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

// --- Typed attribute access ----------------------------------------------------------------

StringRef attrKind(Attribute attr) {
  if (auto integer = dyn_cast<IntegerAttr>(attr))
    return integer.getType().isInteger(1) ? "a boolean" : "an integer";
  if (isa<FloatAttr>(attr))
    return "a float";
  if (isa<StringAttr>(attr))
    return "a string";
  if (isa<DenseI64ArrayAttr>(attr))
    return "a list of integers";
  if (isa<DenseF32ArrayAttr>(attr))
    return "a list of floats";
  if (isa<ElementsAttr>(attr))
    return "a tensor";
  if (auto array = dyn_cast<ArrayAttr>(attr);
      array && llvm::all_of(array, [](Attribute a) { return isa<StringAttr>(a); }))
    return "a list of strings";
  return "an unsupported attribute kind";
}

int64_t AttrReader::getInt(StringRef name, int64_t fallback) {
  Attribute attr = node.getOnnxAttrs().get(name);
  if (!attr)
    return fallback;
  auto integer = dyn_cast<IntegerAttr>(attr);
  if (!integer)
    return wrongKind(name, attr, "an integer"), fallback;
  if (integer.getType().isInteger(1)) // MLIR's `true`/`false` in hand-written IR
    return integer.getValue().getZExtValue();
  if (std::optional<int64_t> value = integer.getValue().trySExtValue())
    return *value;
  return wrongKind(name, attr, "a 64-bit integer"), fallback;
}

std::optional<float> AttrReader::getOptionalFloat(StringRef name) {
  Attribute attr = node.getOnnxAttrs().get(name);
  if (!attr)
    return std::nullopt;
  if (auto real = dyn_cast<FloatAttr>(attr))
    return static_cast<float>(real.getValueAsDouble());
  return wrongKind(name, attr, "a float"), std::nullopt;
}

SmallVector<int64_t> AttrReader::getInts(StringRef name, ArrayRef<int64_t> fallback) {
  Attribute attr = node.getOnnxAttrs().get(name);
  if (!attr)
    return SmallVector<int64_t>(fallback);
  if (auto ints = dyn_cast<DenseI64ArrayAttr>(attr))
    return SmallVector<int64_t>(ints.asArrayRef());
  return wrongKind(name, attr, "a list of integers"), SmallVector<int64_t>(fallback);
}

bool AttrReader::getFlag(StringRef name, bool fallback) {
  bool wasFailed = failedAny;
  int64_t value = getInt(name, fallback ? 1 : 0);
  if (value == 0 || value == 1 || failedAny != wasFailed)
    return value == 1;
  fail("attribute '" + name + "' must be 0 or 1, got " + Twine(value));
  return fallback;
}

StringRef AttrReader::getString(StringRef name, StringRef fallback) {
  Attribute attr = node.getOnnxAttrs().get(name);
  if (!attr)
    return fallback;
  if (auto string = dyn_cast<StringAttr>(attr))
    return string.getValue();
  return wrongKind(name, attr, "a string"), fallback;
}

std::vector<std::string> AttrReader::getStrings(StringRef name) {
  Attribute attr = node.getOnnxAttrs().get(name);
  std::vector<std::string> out;
  if (!attr)
    return out;
  auto array = dyn_cast<ArrayAttr>(attr);
  if (!array || !llvm::all_of(array, [](Attribute a) { return isa<StringAttr>(a); }))
    return wrongKind(name, attr, "a list of strings"), out;
  for (Attribute a : array)
    out.push_back(cast<StringAttr>(a).str());
  return out;
}

void AttrReader::fail(const Twine &message) {
  failedAny = true;
  (void)errors.report(node, message);
}

void AttrReader::wrongKind(StringRef name, Attribute attr, StringRef expected) {
  fail("attribute '" + name + "' must be " + expected + ", got " + attrKind(attr));
}

// --- The node kinds ---------------------------------------------------------------------------

namespace {

/// A node kind the patterns know: its inputs (ONNX's optional ones included) and every
/// attribute ONNX (opset 13+) or the exporter defines for it. An attribute outside the list
/// is an error: a misspelt `tau` would otherwise compile as the default.
struct NodeKind {
  StringRef domain, type;
  unsigned minInputs, maxInputs;
  StringRef operands;
  /// Space-separated; the exporter's own kinds (domain kNeuronDomain) have none here and
  /// take the attributes of profile::profileOps().
  StringRef attributes;
};

constexpr NodeKind kNodeKinds[] = {
    {"", "Gemm", 2, 3, "X, W[, B]", "alpha beta transA transB"},
    {"", "Conv", 2, 3, "X, W[, B]", "auto_pad dilations group kernel_shape pads strides"},
    {"", "BatchNormalization", 5, 5, "X, scale, B, mean, var",
     "epsilon momentum training_mode"},
    {"", "MaxPool", 1, 1, "X",
     "auto_pad ceil_mode dilations kernel_shape pads storage_order strides"},
    {"", "AveragePool", 1, 1, "X",
     "auto_pad ceil_mode count_include_pad dilations kernel_shape pads strides"},
    {"", "GlobalAveragePool", 1, 1, "X", ""},
    {"", "Flatten", 1, 1, "input", "axis"},
    {"", "Dropout", 1, 2, "data[, ratio]", "seed"},
    {"", "Identity", 1, 1, "input", ""},
    {"", "Reshape", 2, 2, "data, shape", "allowzero"},
    {"", "Add", 2, 2, "A, B", ""},
    {"", "Mul", 2, 2, "A, B", ""},
    {"", "Concat", 2, 1024, "inputs...", "axis"},
    {"", "ReduceMean", 1, 1, "data", "axes keepdims noop_with_empty_axes"},
    {"", "ReduceSum", 2, 2, "data, axes", "keepdims noop_with_empty_axes"},
    {kNeuronDomain, profile::op::kIFNode, 1, 1, "x", ""},
    {kNeuronDomain, profile::op::kLIFNode, 1, 1, "x", ""},
    {kNeuronDomain, profile::op::kParametricLIFNode, 2, 2, "x, w", ""},
    {kNeuronDomain, profile::op::kAdaptiveAvgPool2d, 1, 1, "X", ""},
    {kNeuronDomain, profile::op::kGroupNorm, 3, 3, "X, scale, B", ""},
    {kNeuronDomain, profile::op::kSpikingAttention, 1, 1, "qkv", ""},
    {kNeuronDomain, profile::op::kNeuron, 1, 1024, "x, operands...", ""},
    {kNeuronDomain, profile::op::kRecurrentNeuron, 3, 1024, "x, weight, bias, operands...", ""},
    {kNeuronDomain, profile::op::kParallelSpikingNeuron, 3, 3, "x, weight, bias", ""},
};

/// Every attribute name `kind` takes.
SmallVector<StringRef> knownAttributes(const NodeKind &kind) {
  SmallVector<StringRef> known;
  if (kind.domain == kNeuronDomain) {
    for (const char *name : profile::findProfileOp(kind.type)->attributes)
      known.push_back(name);
    return known;
  }
  kind.attributes.split(known, ' ', -1, /*KeepEmpty=*/false);
  return known;
}

const NodeKind *lookupKind(ONNXNodeOp node) {
  for (const NodeKind &kind : kNodeKinds)
    if (node.getDomain() == kind.domain && node.getOpType() == kind.type)
      return &kind;
  return nullptr;
}

/// Inputs and outputs: the patterns index inputs by these counts and replace one result.
LogicalResult checkCounts(ONNXNodeOp node, const NodeKind &kind, NodeErrors &errors) {
  unsigned inputs = node.getInputs().size();
  if (inputs < kind.minInputs || inputs > kind.maxInputs) {
    std::string expected = kind.minInputs == kind.maxInputs
                               ? std::to_string(kind.minInputs)
                               : llvm::formatv("{0} or {1}", kind.minInputs, kind.maxInputs).str();
    return errors.report(node, llvm::formatv("expects {0} input(s) ({1}), got {2}", expected,
                                             kind.operands, inputs));
  }
  // ONNX's optional second outputs (Dropout's mask, MaxPool's indices) have no snn op.
  if (node->getNumResults() != 1)
    return errors.report(node, "expects 1 output, got " + Twine(node->getNumResults()));
  return success();
}

/// One diagnostic for all of a node's unknown attributes: a wrong op type or a foreign
/// exporter typically brings several at once.
LogicalResult checkAttributeNames(ONNXNodeOp node, const NodeKind &kind, NodeErrors &errors) {
  SmallVector<StringRef> known = knownAttributes(kind), unknown;
  for (NamedAttribute attr : node.getOnnxAttrs())
    if (!llvm::is_contained(known, attr.getName().getValue()))
      unknown.push_back(attr.getName().getValue());
  if (unknown.empty())
    return success();
  std::string names = "'" + llvm::join(unknown, "', '") + "'";
  std::string takes = known.empty() ? std::string("none") : llvm::join(known, ", ");
  return errors.report(node, llvm::formatv("unknown attribute{0} {1} ({2} takes: {3})",
                                           unknown.size() > 1 ? "s" : "", names, kind.type,
                                           takes));
}

/// The kind's own rules, through the reader the patterns use.
LogicalResult checkParameters(ONNXNodeOp node, NodeErrors &errors) {
  StringRef type = node.getOpType();
  if (isNeuronNode(node)) {
    Builder builder(node.getContext());
    return readNeuron(node, builder, errors);
  }
  if (node.getDomain() == kNeuronDomain && type == profile::op::kAdaptiveAvgPool2d)
    return readAdaptiveAvgPool(node, errors);
  if (node.getDomain() == kNeuronDomain && type == profile::op::kGroupNorm)
    return readGroupNorm(node, errors);
  if (node.getDomain() == kNeuronDomain && type == profile::op::kSpikingAttention)
    return readSpikingAttention(node, errors);
  if (node.getDomain() == kNeuronDomain &&
      (type == profile::op::kNeuron || type == profile::op::kRecurrentNeuron)) {
    Builder builder(node.getContext());
    return readDescribedNeuron(node, builder, errors);
  }
  if (node.getDomain() == kNeuronDomain && type == profile::op::kParallelSpikingNeuron) {
    Builder builder(node.getContext());
    return readParallelNeuron(node, builder, errors);
  }
  if (type == "Gemm")
    return readGemm(node, errors);
  if (type == "Conv")
    return readConv(node, errors);
  if (type == "BatchNormalization")
    return readBatchNorm(node, errors);
  if (type == "MaxPool" || type == "AveragePool")
    return readWindow(node, errors);
  if (type == "Flatten")
    return readFlatten(node, errors);
  if (type == "Dropout")
    return readDropout(node, errors);
  if (type == "ReduceMean")
    return readReduceMean(node, errors);
  if (type == "Concat")
    return readConcat(node, errors);
  if (type == "ReduceSum")
    return readReduceSum(node, errors);
  if (type == "Reshape")
    return readReshape(node, errors);
  return success(); // GlobalAveragePool, Identity, Add, Mul: nothing to read
}

} // namespace

LogicalResult validateNode(ONNXNodeOp node, NodeErrors &errors) {
  const NodeKind *kind = lookupKind(node);
  if (!kind) {
    if (node.getDomain().empty())
      return errors.report(node, "unsupported ONNX op");
    return errors.report(node, "unsupported op of domain '" + node.getDomain() + "'");
  }
  // The first failing stage only: the readers index inputs by the counts, a misspelt
  // attribute would be read as its default, and a wrong op type fails every stage at once.
  if (failed(checkCounts(node, *kind, errors)) ||
      failed(checkAttributeNames(node, *kind, errors)))
    return failure();
  return checkParameters(node, errors);
}

} // namespace snn::legalize
