//===- ONNXNodeReader.h - Reading ONNX nodes for LegalizeONNX ---*- C++ -*-===//
//
// What the legalization needs to read an `snn.onnx_node` safely: the table of node kinds it
// knows (inputs, outputs, attribute names), strict typed attribute reads, and one checked
// reader per node kind that returns the node's parameters or reports what is wrong, naming
// the node. Private to lib/Conversion/ONNXToSNN.
//
// The readers serve two callers with one set of rules: the pass's validation walk, which
// visits every node once and emits, and the rewrite patterns, which read the same parameters
// silently (a pattern may be tried many times; only the walk reports).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_CONVERSION_ONNXTOSNN_ONNXNODEREADER_H
#define SNN_CONVERSION_ONNXTOSNN_ONNXNODEREADER_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <optional>
#include <string>
#include <utility>

#include "snn/Dialect/SNN/IR/SNNOps.h"
#include "snn/Schema/OnnxProfile.h"

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

/// The names of the exporter's ONNX: domain, op types, attributes (docs/onnx-profile.md).
namespace profile = schema::profile;

/// SpikeMesh's ONNX domain: its neurons, and the per-step layers and the attention that
/// opset 13 cannot express.
constexpr StringRef kNeuronDomain = profile::kDomain;

bool isNode(Operation *op, StringRef opType, StringRef domain = "");

/// A spikemesh neuron node (IFNode, LIFNode, ParametricLIFNode); the domain also holds
/// per-step layers that opset 13 lacks (AdaptiveAvgPool2d, GroupNorm).
bool isNeuronNode(Operation *op);
std::string formatFloat(float value);
std::string formatInts(ArrayRef<int64_t> values);
/// A type as the IR prints it.
std::string typeText(mlir::Type type);
/// The node's source name (its NameLoc), or "<unnamed>".
std::string nodeName(Operation *op);

/// Where node errors go. Emitting: each report becomes one diagnostic, `ONNX node 'NAME'
/// (OpType): message`, on the node. Silent: reports only mark the failure; the patterns read
/// nodes this way, so a pattern the greedy driver retries never repeats a diagnostic.
class NodeErrors {
public:
  static NodeErrors emitting() { return NodeErrors(true); }
  static NodeErrors silent() { return NodeErrors(false); }

  bool failed() const { return failedAny; }
  LogicalResult report(ONNXNodeOp node, const Twine &message);

private:
  explicit NodeErrors(bool emit) : emit(emit) {}
  bool emit;
  bool failedAny = false;
};

/// The kind of an attribute value, for diagnostics ("an integer", "a list of floats").
StringRef attrKind(Attribute attr);

/// Typed reads of a node's ONNX attributes, the only way the readers read them. Absent: the
/// given default. Present with another kind than ONNX's schema gives the attribute: an error
/// naming the node and the attribute (an INT is no FLOAT: `tau` given as INT -1 used to
/// compile as the default 2.0), and the default is returned so that the other attributes are
/// still checked; callers test failed() before using any value.
class AttrReader {
public:
  AttrReader(ONNXNodeOp node, NodeErrors &errors) : node(node), errors(errors) {}

  bool failed() const { return failedAny; }
  int64_t getInt(StringRef name, int64_t fallback);
  float getFloat(StringRef name, float fallback) {
    return getOptionalFloat(name).value_or(fallback);
  }
  std::optional<float> getOptionalFloat(StringRef name);
  SmallVector<int64_t> getInts(StringRef name, ArrayRef<int64_t> fallback);
  /// An int 0/1 (ONNX has no bool attributes).
  bool getFlag(StringRef name, bool fallback);
  StringRef getString(StringRef name, StringRef fallback);
  /// A list of strings (ONNX STRINGS); empty when absent.
  std::vector<std::string> getStrings(StringRef name);
  /// An error on the node; the reader counts as failed.
  void fail(const Twine &message);

private:
  void wrongKind(StringRef name, Attribute attr, StringRef expected);

  ONNXNodeOp node;
  NodeErrors &errors;
  bool failedAny = false;
};

/// The integers of a constant tensor operand, if it is one.
std::optional<SmallVector<int64_t>> constantInts(Value value);

/// PyTorch's momentum from ONNX's (which weights the old statistic).
float pytorchMomentum(float onnxMomentum);

/// Checks what needs no shapes: a known kind, its input and output counts, attribute names
/// and kinds, and every attribute rule of the kind (through the readers below). Reports each
/// problem once; the pass calls it once per node before any rewrite.
LogicalResult validateNode(ONNXNodeOp node, NodeErrors &errors);

// --- Checked parameters of each node kind -----------------------------------------------------
// Each reader assumes validateNode's counts (it indexes inputs by them) and reports through
// `errors`; a failure means the node is invalid, whatever its operands' shapes.

/// Read and checked; `kernel` is empty for a Conv without kernel_shape (the weight's).
struct Window {
  SmallVector<int64_t> kernel, strides, pads, dilations;
  bool ceilMode = false;
  bool countIncludePad = false;
};

/// The kernel, strides, pads and dilations of a Conv, MaxPool or AveragePool, read and
/// checked (2-D, symmetric padding).
mlir::FailureOr<Window> readWindow(ONNXNodeOp node, NodeErrors &errors);
/// A Conv's window and group; kernel_shape, when given, must be the weight's.
mlir::FailureOr<std::pair<Window, int64_t>> readConv(ONNXNodeOp node, NodeErrors &errors);
/// Gemm: only Linear's form (transB=1, transA=0, alpha=beta=1) has no parameters.
LogicalResult readGemm(ONNXNodeOp node, NodeErrors &errors);

struct BatchNormParams {
  float epsilon, momentum; // momentum in PyTorch's convention
};
mlir::FailureOr<BatchNormParams> readBatchNorm(ONNXNodeOp node, NodeErrors &errors);
LogicalResult readFlatten(ONNXNodeOp node, NodeErrors &errors);
/// Dropout's ratio: its constant second input, 0.5 without one.
mlir::FailureOr<float> readDropout(ONNXNodeOp node, NodeErrors &errors);
/// spikemesh.AdaptiveAvgPool2d: `output_size`, two positive sizes.
mlir::FailureOr<SmallVector<int64_t>> readAdaptiveAvgPool(ONNXNodeOp node, NodeErrors &errors);

struct GroupNormParams {
  int64_t groups;
  float epsilon;
};
/// spikemesh.GroupNorm: `num_groups` >= 1 and `epsilon` finite and > 0.
mlir::FailureOr<GroupNormParams> readGroupNorm(ONNXNodeOp node, NodeErrors &errors);

/// Concat of time-major tensors: `axis` (required) a per-step dim, >= 2.
mlir::FailureOr<int64_t> readConcat(ONNXNodeOp node, NodeErrors &errors);

/// ReduceSum (opset 13: axes is an input): only the readout over T, a constant axes [0] and
/// keepdims=0.
LogicalResult readReduceSum(ONNXNodeOp node, NodeErrors &errors);

/// ReduceMean: the readout over T (axes=[0], keepdims=0: `overTime`), or a mean of every
/// step over per-step dims (every axis >= 2; `axes` ascending).
struct ReduceMeanParams {
  bool overTime = false;
  SmallVector<int64_t> axes;
  bool keepdims = false;
};
mlir::FailureOr<ReduceMeanParams> readReduceMean(ONNXNodeOp node, NodeErrors &errors);

/// spikemesh.SpikingAttention: `num_heads` (required) >= 1 and `scale` (required) finite.
struct SpikingAttentionParams {
  int64_t heads;
  float scale;
};
mlir::FailureOr<SpikingAttentionParams> readSpikingAttention(ONNXNodeOp node,
                                                             NodeErrors &errors);
/// A Reshape's target shape: its constant 1-D integer second input.
mlir::FailureOr<SmallVector<int64_t>> readReshape(ONNXNodeOp node, NodeErrors &errors);

/// A neuron node's attributes, read and checked.
struct NeuronParams {
  FloatAttr threshold, reset, alpha, beta, tau; // beta: null for a surrogate without one
  mlir::BoolAttr detach, decayInput;
  SurrogateKindAttr surrogate;
};
mlir::FailureOr<NeuronParams> readNeuron(ONNXNodeOp node, mlir::Builder &builder,
                                         NodeErrors &errors);

/// A described neuron's (spikemesh.Neuron, spikemesh.RecurrentNeuron) attributes as the
/// snn.neuron and snn.recurrent_neuron ops take them, read and compiled
/// (schema::compileNeuron) to check them. The operands follow the input (a recurrent
/// neuron's: the input, the feedback weight and bias).
struct DescribedNeuronParams {
  mlir::ArrayAttr states, constants, operandNames, charge, update;
  mlir::StringAttr fire, reset, output; // fire: null for a neuron that does not spike
  mlir::BoolAttr detach;
  SurrogateKindAttr surrogate;
  FloatAttr alpha, beta;
};
mlir::FailureOr<DescribedNeuronParams> readDescribedNeuron(ONNXNodeOp node, mlir::Builder &builder,
                                                           NodeErrors &errors);

/// A parallel spiking neuron's (spikemesh.ParallelSpikingNeuron) attributes as the
/// snn.parallel_neuron op takes them: `variant` (required) one of psn, masked, sliding, `k`
/// given for masked and sliding only (>= 1; its bound T is the input's, checked with it),
/// `lambda` for masked only (finite), the surrogate as a neuron's.
struct ParallelNeuronParams {
  ParallelVariantAttr variant;
  IntegerAttr k;    // null for psn
  FloatAttr lambda; // null but for masked
  SurrogateKindAttr surrogate;
  FloatAttr alpha, beta;
};
mlir::FailureOr<ParallelNeuronParams> readParallelNeuron(ONNXNodeOp node, mlir::Builder &builder,
                                                         NodeErrors &errors);

} // namespace snn::legalize

#endif // SNN_CONVERSION_ONNXTOSNN_ONNXNODEREADER_H
