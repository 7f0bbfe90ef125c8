//===- ONNXNodeReader.cpp - Reading ONNX nodes for LegalizeONNX -----------===//
#include "ONNXNodeReader.h"

#include "mlir/IR/Matchers.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstdio>
#include <cstdlib>

using namespace mlir;

namespace snn::legalize {

LogicalResult ErrorState::report(ONNXNodeOp node, const Twine &message) {
  failed = true;
  if (reported.emplace(node, message.str()).second)
    node.emitError() << "ONNX node '" << nodeName(node) << "' (" << node.getOpType()
                     << "): " << message;
  return failure();
}

bool isNode(Operation *op, StringRef opType, StringRef domain) {
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

// --- Typed attribute access ----------------------------------------------------------------

StringRef attrKind(Attribute attr) {
  if (isa<IntegerAttr>(attr))
    return "an integer";
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
  return "an unsupported attribute kind";
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

std::string formatInts(ArrayRef<int64_t> values) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << '[';
  llvm::interleaveComma(values, os);
  os << ']';
  return text;
}

// --- Arity ----------------------------------------------------------------------------------

struct Arity {
  StringLiteral domain, type;
  unsigned min, max;
  StringLiteral operands;
};

constexpr Arity kArities[] = {
    {"", "Gemm", 2, 3, "X, W[, B]"},
    {"", "Conv", 2, 3, "X, W[, B]"},
    {"", "BatchNormalization", 5, 5, "X, scale, B, mean, var"},
    {"", "MaxPool", 1, 1, "X"},
    {"", "AveragePool", 1, 1, "X"},
    {"", "GlobalAveragePool", 1, 1, "X"},
    {"", "Flatten", 1, 1, "input"},
    {"", "Dropout", 1, 2, "data[, ratio]"},
    {"", "Identity", 1, 1, "input"},
    {"", "Reshape", 2, 2, "data, shape"},
    {"", "Add", 2, 2, "A, B"},
    {"", "Mul", 2, 2, "A, B"},
    {"", "ReduceMean", 1, 1, "data"},
    {kNeuronDomain, "IFNode", 1, 1, "x"},
    {kNeuronDomain, "LIFNode", 1, 1, "x"},
    {kNeuronDomain, "ParametricLIFNode", 2, 2, "x, w"},
};

std::string arityError(ONNXNodeOp node) {
  for (const Arity &arity : kArities) {
    if (node.getDomain() != arity.domain || node.getOpType() != arity.type)
      continue;
    unsigned count = node.getInputs().size();
    if (count >= arity.min && count <= arity.max)
      return "";
    std::string expected = arity.min == arity.max
                               ? std::to_string(arity.min)
                               : llvm::formatv("{0} or {1}", arity.min, arity.max).str();
    return llvm::formatv("expects {0} input(s) ({1}), got {2}", expected, arity.operands,
                         count);
  }
  return "";
}

LogicalResult checkArity(ONNXNodeOp node, ErrorState &errors) {
  std::string message = arityError(node);
  return message.empty() ? success() : errors.report(node, message);
}

// --- Window attributes of Conv, MaxPool, AveragePool ------------------------------------------

/// Checks that `values` are `count` integers, each >= `minimum` (0 or 1).
LogicalResult checkInts(ONNXNodeOp node, ErrorState &errors, StringRef name,
                        ArrayRef<int64_t> values, size_t count, int64_t minimum) {
  if (values.size() == count && llvm::all_of(values, [&](int64_t v) { return v >= minimum; }))
    return success();
  return errors.report(node, llvm::formatv("attribute '{0}' must be {1} {2} integers, got {3}",
                                           name, count, minimum > 0 ? "positive" : "non-negative",
                                           formatInts(values)));
}

FailureOr<Window> readWindow(ONNXNodeOp node, ErrorState &errors) {
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
    return errors.report(node, "storage_order=1 is not supported");
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
  window.pads = {pads[0], pads[1]};
  return window;
}

} // namespace snn::legalize
