//===- ONNXNodeReader.h - Reading ONNX nodes for LegalizeONNX ---*- C++ -*-===//
//
// What the legalization patterns need to read an `snn.onnx_node` safely: strict typed
// attribute reads, input counts per node kind, the window attributes of convs and pools, and
// one report per problem and node. Private to lib/Dialect/SNN/Transforms.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_DIALECT_SNN_TRANSFORMS_ONNXNODEREADER_H
#define SNN_DIALECT_SNN_TRANSFORMS_ONNXNODEREADER_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <optional>
#include <set>
#include <string>
#include <utility>

#include "snn/Dialect/SNN/IR/SNNOps.h"

namespace snn::legalize {

using llvm::dyn_cast;
using llvm::isa;
using mlir::Attribute;
using mlir::DenseI64ArrayAttr;
using mlir::FloatAttr;
using mlir::IntegerAttr;
using mlir::StringAttr;
using mlir::LogicalResult;
using mlir::Operation;
using mlir::Value;
using llvm::ArrayRef;
using llvm::SmallVector;
using llvm::StringRef;
using llvm::Twine;

/// The ONNX domain of SpikeMesh's neuron nodes.
constexpr llvm::StringLiteral kNeuronDomain = "spikemesh";

bool isNode(Operation *op, StringRef opType, StringRef domain = "");
std::string formatFloat(float value);
std::string formatInts(ArrayRef<int64_t> values);
/// The node's source name (its NameLoc), or "<unnamed>".
std::string nodeName(Operation *op);

/// Reports a node the patterns recognised but cannot legalize (bad attribute or operand).
/// Patterns cannot fail a pass on their own, so they record the error here. The greedy driver
/// retries a failed pattern on every iteration, so each problem of a node is reported once.
struct ErrorState {
  bool failed = false;
  std::set<std::pair<Operation *, std::string>> reported;
  mlir::LogicalResult report(ONNXNodeOp node, const llvm::Twine &message);
};

/// The kind of an attribute value, for diagnostics ("an integer", "a list of floats").
StringRef attrKind(Attribute attr);

/// Typed reads of a node's ONNX attributes, the only way the patterns read them. Absent: the
/// given default. Present with another kind: an error naming the node and the attribute, and
/// the default is returned so the other attributes are still checked; callers test failed()
/// before using any value. An integer is accepted for a float (Python exporters write `tau=2`
/// as INT) and converted; nothing else is converted.
class AttrReader {
public:
  AttrReader(ONNXNodeOp node, ErrorState &errors) : node(node), errors(errors) {}

  bool failed() const { return failedAny; }

  int64_t getInt(StringRef name, int64_t fallback) {
    Attribute attr = node.getOnnxAttrs().get(name);
    if (!attr)
      return fallback;
    auto integer = dyn_cast<IntegerAttr>(attr);
    if (!integer)
      return wrongKind(name, attr, "an integer"), fallback;
    if (integer.getType().isInteger(1)) // MLIR's `true`/`false`
      return integer.getValue().getZExtValue();
    if (std::optional<int64_t> value = integer.getValue().trySExtValue())
      return *value;
    return wrongKind(name, attr, "a 64-bit integer"), fallback;
  }

  float getFloat(StringRef name, float fallback) {
    return getOptionalFloat(name).value_or(fallback);
  }

  std::optional<float> getOptionalFloat(StringRef name) {
    Attribute attr = node.getOnnxAttrs().get(name);
    if (!attr)
      return std::nullopt;
    if (auto real = dyn_cast<FloatAttr>(attr))
      return static_cast<float>(real.getValueAsDouble());
    if (isa<IntegerAttr>(attr))
      return static_cast<float>(getInt(name, 0));
    return wrongKind(name, attr, "a float"), std::nullopt;
  }

  SmallVector<int64_t> getInts(StringRef name, ArrayRef<int64_t> fallback) {
    Attribute attr = node.getOnnxAttrs().get(name);
    if (!attr)
      return SmallVector<int64_t>(fallback);
    if (auto ints = dyn_cast<DenseI64ArrayAttr>(attr))
      return SmallVector<int64_t>(ints.asArrayRef());
    return wrongKind(name, attr, "a list of integers"), SmallVector<int64_t>(fallback);
  }

  /// An int 0/1 (ONNX has no bool attributes).
  bool getFlag(StringRef name, bool fallback) {
    int64_t value = getInt(name, fallback ? 1 : 0);
    if (value == 0 || value == 1)
      return value == 1;
    failedAny = true;
    (void)errors.report(node, "attribute '" + name + "' must be 0 or 1, got " + Twine(value));
    return fallback;
  }

  StringRef getString(StringRef name, StringRef fallback) {
    Attribute attr = node.getOnnxAttrs().get(name);
    if (!attr)
      return fallback;
    if (auto string = dyn_cast<StringAttr>(attr))
      return string.getValue();
    return wrongKind(name, attr, "a string"), fallback;
  }

private:
  void wrongKind(StringRef name, Attribute attr, StringRef expected) {
    failedAny = true;
    (void)errors.report(node, "attribute '" + name + "' must be " + expected + ", got " +
                                  attrKind(attr));
  }

  ONNXNodeOp node;
  ErrorState &errors;
  bool failedAny = false;
};

/// The integers of a constant tensor operand, if it is one.
std::optional<SmallVector<int64_t>> constantInts(Value value);

/// PyTorch's momentum from ONNX's (which weights the old statistic).
float pytorchMomentum(float onnxMomentum);

/// Why `node`, of a kind the patterns know, has the wrong number of inputs; empty if it has
/// the right number or is of another kind.
std::string arityError(ONNXNodeOp node);
/// An error on `node` when a node kind the patterns know has the wrong number of inputs.
LogicalResult checkArity(ONNXNodeOp node, ErrorState &errors);

/// Read and checked; `kernel` is empty for a Conv without kernel_shape (the weight's).
struct Window {
  SmallVector<int64_t> kernel, strides, pads, dilations;
  bool ceilMode = false;
  bool countIncludePad = false;
};

/// The kernel, strides, pads and dilations of a Conv, MaxPool or AveragePool, read and
/// checked (2-D, symmetric padding); an error on the node otherwise.
mlir::FailureOr<Window> readWindow(ONNXNodeOp node, ErrorState &errors);

} // namespace snn::legalize

#endif // SNN_DIALECT_SNN_TRANSFORMS_ONNXNODEREADER_H
