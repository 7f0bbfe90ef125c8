//===- NIRImporter.cpp - A NIR graph as snn IR ----------------------------===//
#include "snn/Import/NIR/NIRImporter.h"

#include "snn/Dialect/SNN/IR/SNNOps.h"
#include "snn/NIR/NIRGraph.h"
#include "snn/NIR/NIRGraphOrder.h"
#include "snn/NIR/NIRNeurons.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringMap.h"

#include <cmath>
#include <cstdio>
#include <map>

using namespace mlir;
using snn::nir::NirArray;
using snn::nir::NirGraph;
using snn::nir::NirNode;

namespace {

std::string formatShape(ArrayRef<int64_t> shape) {
  return snn::nir::formatShape(std::vector<int64_t>(shape.begin(), shape.end()));
}

std::string formatNumber(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", value);
  return buffer;
}

/// The primitives the importer knows, for the error about one it does not.
constexpr const char *kSupported = "Input, Output, Affine, Linear, Conv2d, SumPool2d, "
                                   "AvgPool2d, Flatten, Scale, IF, I, LI, LIF, CubaLI, "
                                   "CubaLIF, Threshold, Delay";

/// Builds `func.func @main` from a NIR graph, node by node in an order where every node
/// follows its inputs.
class NIRImporter {
public:
  NIRImporter(MLIRContext *context, StringRef path, const NirGraph &graph,
              const snn::NIRImportOptions &options)
      : context(context), builder(context), path(path.str()), graph(graph), options(options),
        fileLoc(FileLineColLoc::get(context, path, 0, 0)) {}

  OwningOpRef<ModuleOp> import();

private:
  FailureOr<SmallVector<const NirNode *>> order();
  LogicalResult importNode(const NirNode &node);
  FailureOr<Value> nodeInput(const NirNode &node);
  FailureOr<Value> importLayer(const NirNode &node, Value input);
  FailureOr<Value> importAffine(const NirNode &node, Value input);
  FailureOr<Value> importConv2d(const NirNode &node, Value input);
  FailureOr<Value> importPool(const NirNode &node, Value input);
  FailureOr<Value> importFlatten(const NirNode &node, Value input);
  FailureOr<Value> importScale(const NirNode &node, Value input);
  FailureOr<Value> importNeuron(const NirNode &node, Value input);
  FailureOr<std::pair<Value, Value>> feedbackWeights(const NirNode &neuron, const NirNode &affine,
                                                     ArrayRef<int64_t> shape);
  FailureOr<SmallVector<int64_t>> declaredShape(const NirNode &node, StringRef key);
  FailureOr<SmallVector<int64_t>> convPadding(const NirNode &node, ArrayRef<int64_t> kernel,
                                              ArrayRef<int64_t> stride,
                                              ArrayRef<int64_t> dilation);
  FailureOr<SmallVector<int64_t>> pair(const NirNode &node, StringRef key,
                                       std::optional<int64_t> fallback = std::nullopt);
  Value parameter(const NirNode &node, StringRef field, ArrayRef<int64_t> shape,
                  ArrayRef<float> values, bool frozen = false);
  RankedTensorType stepType(ArrayRef<int64_t> sampleShape);
  Location nodeLoc(const NirNode &node) {
    return NameLoc::get(builder.getStringAttr(node.name), fileLoc);
  }
  InFlightDiagnostic nodeError(const NirNode &node, const Twine &message) {
    return emitError(fileLoc, "NIR node '" + node.name + "' (" + node.type + "): " + message);
  }

  MLIRContext *context;
  OpBuilder builder;
  std::string path;
  const NirGraph &graph;
  const snn::NIRImportOptions &options;
  Location fileLoc;
  /// Each imported node's output.
  llvm::StringMap<Value> values;
  /// The import order, each node's sources, and the neurons fed back through an Affine or
  /// Linear (the neuron's op takes that node in; it is not imported on its own).
  snn::nir::NirGraphOrder graphOrder;
  std::map<std::string, std::vector<std::string>> &sources = graphOrder.sources;
};

/// The per-sample shape of a [T, N, shape...] value.
SmallVector<int64_t> sampleShape(Value value) {
  return SmallVector<int64_t>(cast<RankedTensorType>(value.getType()).getShape().drop_front(2));
}

RankedTensorType NIRImporter::stepType(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> dims{options.steps > 0 ? options.steps : ShapedType::kDynamic,
                            ShapedType::kDynamic};
  dims.append(shape.begin(), shape.end());
  return RankedTensorType::get(dims, builder.getF32Type());
}

/// A whole-number array parameter (a shape, a kernel size), each entry >= 0.
FailureOr<SmallVector<int64_t>> NIRImporter::declaredShape(const NirNode &node, StringRef key) {
  const NirArray *array = node.param(key.str());
  if (!array)
    return nodeError(node, "has no parameter '" + key + "'"), failure();
  SmallVector<int64_t> shape;
  for (double value : array->values) {
    if (!(value >= 0) || value != std::floor(value) || value > double(INT32_MAX))
      return nodeError(node, "parameter '" + key + "' holds " + formatNumber(value) +
                                 ", not a whole number >= 0"),
             failure();
    shape.push_back(int64_t(value));
  }
  return shape;
}

/// A 2-D attribute (stride, padding, kernel size): two whole numbers or one for both.
FailureOr<SmallVector<int64_t>> NIRImporter::pair(const NirNode &node, StringRef key,
                                                  std::optional<int64_t> fallback) {
  if (!node.param(key.str())) {
    auto text = node.strings.find(key.str());
    if (text != node.strings.end())
      return nodeError(node, "parameter '" + key + "' is the string '" + text->second +
                                 "' (only numbers are supported)"),
             failure();
    if (fallback)
      return SmallVector<int64_t>{*fallback, *fallback};
  }
  auto values = declaredShape(node, key);
  if (failed(values))
    return failure();
  if (values->size() == 1)
    values->push_back(values->front());
  if (values->size() != 2)
    return nodeError(node, "parameter '" + key + "' has " + Twine(values->size()) +
                               " entries (a 2-D primitive takes 1 or 2)"),
           failure();
  return values;
}

Value NIRImporter::parameter(const NirNode &node, StringRef field, ArrayRef<int64_t> shape,
                             ArrayRef<float> values, bool frozen) {
  auto type = RankedTensorType::get(shape, builder.getF32Type());
  auto op = snn::ParameterOp::create(builder, nodeLoc(node), (node.name + "." + field).str(),
                                     DenseElementsAttr::get(type, values), /*buffer=*/false);
  op.setFrozen(frozen);
  return op;
}

/// Every edge's source is imported before its target; a cycle other than a neuron's feedback
/// loop is refused.
FailureOr<SmallVector<const NirNode *>> NIRImporter::order() {
  graphOrder = snn::nir::orderNirGraph(graph);
  if (graphOrder.cycleNode.empty())
    return SmallVector<const NirNode *>(graphOrder.sorted.begin(), graphOrder.sorted.end());
  return nodeError(*graph.node(graphOrder.cycleNode),
                   "is on a cycle of edges (" + graphOrder.cycle +
                       "): the cycles supported are a neuron's output fed back to it "
                       "through one Affine or Linear"),
         failure();
}

/// The sum of the outputs of the nodes with an edge into `node`.
FailureOr<Value> NIRImporter::nodeInput(const NirNode &node) {
  const std::vector<std::string> &from = sources[node.name];
  if (from.empty())
    return nodeError(node, "has no input (no edge ends at it)"), failure();
  Value sum;
  for (const std::string &name : from) {
    const NirNode *source = graph.node(name);
    if (source->type == "Output")
      return nodeError(node, "reads Output node '" + name + "' (an Output has no edges out)"),
             failure();
    Value value = values.lookup(name);
    if (sum && sum.getType() != value.getType())
      return nodeError(node, "adds inputs of different shapes: " + formatShape(sampleShape(sum)) +
                                 " and " + formatShape(sampleShape(value)) + " (from '" + name +
                                 "')"),
             failure();
    sum = sum ? Value(snn::AddOp::create(builder, nodeLoc(node), sum, value)) : value;
  }
  return sum;
}

FailureOr<Value> NIRImporter::importAffine(const NirNode &node, Value input) {
  const NirArray *weight = node.param("weight");
  if (!weight || weight->shape.size() != 2 || weight->shape[0] < 1 || weight->shape[1] < 1)
    return nodeError(node, "needs a 2-D 'weight' [out, in] of at least one value"), failure();
  SmallVector<int64_t> in = sampleShape(input);
  if (in.size() != 1 || in[0] != weight->shape[1])
    return nodeError(node, "its weight takes " + Twine(weight->shape[1]) +
                               " features, but its input has the shape " + formatShape(in) +
                               " (a Flatten before it makes one dimension)"),
           failure();
  int64_t out = weight->shape[0];
  SmallVector<float> w(weight->values.begin(), weight->values.end());
  Value weightValue = parameter(node, "weight", {out, in[0]}, w);
  Value biasValue;
  if (node.type == "Affine") {
    const NirArray *bias = node.param("bias");
    if (!bias || bias->size() != out)
      return nodeError(node, "needs a 'bias' of " + Twine(out) + " values"), failure();
    SmallVector<float> b(bias->values.begin(), bias->values.end());
    biasValue = parameter(node, "bias", {out}, b);
  }
  return Value(snn::LinearOp::create(builder, nodeLoc(node), stepType({out}), input, weightValue,
                                     biasValue));
}

/// A convolution's padding: numbers, or the string "valid" (none) or "same" (PyTorch's
/// meaning: stride 1, each side padded by half the dilated kernel's extra span; a span that
/// does not halve would pad one side more, which snn.conv2d cannot).
FailureOr<SmallVector<int64_t>> NIRImporter::convPadding(const NirNode &node,
                                                         ArrayRef<int64_t> kernel,
                                                         ArrayRef<int64_t> stride,
                                                         ArrayRef<int64_t> dilation) {
  auto text = node.strings.find("padding");
  if (node.param("padding") || text == node.strings.end())
    return pair(node, "padding", 0);
  if (text->second == "valid")
    return SmallVector<int64_t>{0, 0};
  if (text->second != "same")
    return nodeError(node, "parameter 'padding' is the string '" + text->second +
                               "' (numbers, 'valid' or 'same' are supported)"),
           failure();
  SmallVector<int64_t> padding;
  for (int axis = 0; axis < 2; ++axis) {
    int64_t span = dilation[axis] * (kernel[axis] - 1);
    if (stride[axis] != 1 || span % 2 != 0)
      return nodeError(node, "padding 'same' needs stride 1 and a kernel whose dilated span "
                             "is even on each side (stride " +
                                 formatShape(stride) + ", kernel " + formatShape(kernel) +
                                 ", dilation " + formatShape(dilation) + ")"),
             failure();
    padding.push_back(span / 2);
  }
  return padding;
}

/// The output extent of a 2-D window over `size`, or 0 where the window does not fit.
int64_t windowExtent(int64_t size, int64_t kernel, int64_t stride, int64_t padding,
                     int64_t dilation) {
  int64_t span = dilation * (kernel - 1) + 1;
  if (stride <= 0 || size + 2 * padding < span)
    return 0;
  return (size + 2 * padding - span) / stride + 1;
}

FailureOr<Value> NIRImporter::importConv2d(const NirNode &node, Value input) {
  const NirArray *weight = node.param("weight");
  if (!weight || weight->shape.size() != 4)
    return nodeError(node, "needs a 4-D 'weight' [out, in / groups, kh, kw]"), failure();
  auto stride = pair(node, "stride", 1);
  auto dilation = pair(node, "dilation", 1);
  if (failed(stride) || failed(dilation))
    return failure();
  if (llvm::any_of(weight->shape, [](int64_t d) { return d < 1; }) ||
      llvm::any_of(*stride, [](int64_t v) { return v < 1; }) ||
      llvm::any_of(*dilation, [](int64_t v) { return v < 1; }))
    return nodeError(node, "its weight " + formatShape(weight->shape) +
                               ", strides and dilations must be at least 1"),
           failure();
  auto padding = convPadding(node, ArrayRef<int64_t>(weight->shape).drop_front(2), *stride,
                             *dilation);
  if (failed(padding))
    return failure();
  const NirArray *groupsParam = node.param("groups");
  int64_t groups = groupsParam && groupsParam->size() == 1 ? int64_t(groupsParam->values[0]) : 1;
  SmallVector<int64_t> in = sampleShape(input);
  ArrayRef<int64_t> w = weight->shape;
  if (in.size() != 3 || groups < 1 || in[0] != w[1] * groups || w[0] % groups != 0)
    return nodeError(node, "its weight " + formatShape(w) + " with " + Twine(groups) +
                               " group(s) does not take its input of shape " + formatShape(in) +
                               " ([channels, height, width])"),
           failure();
  if (node.param("input_shape")) {
    auto declared = declaredShape(node, "input_shape");
    if (failed(declared))
      return failure();
    if (ArrayRef<int64_t>(*declared) != ArrayRef<int64_t>(in).drop_front())
      return nodeError(node, "declares the input size " + formatShape(*declared) +
                                 ", but its input is " + formatShape(in)),
             failure();
  }
  SmallVector<int64_t> out{w[0]};
  for (int axis = 0; axis < 2; ++axis) {
    out.push_back(windowExtent(in[axis + 1], w[axis + 2], (*stride)[axis], (*padding)[axis],
                               (*dilation)[axis]));
    if (out.back() == 0)
      return nodeError(node, "its kernel does not fit its input " + formatShape(in)), failure();
  }
  Value weightValue = parameter(node, "weight", w,
                                SmallVector<float>(weight->values.begin(), weight->values.end()));
  Value biasValue;
  if (const NirArray *bias = node.param("bias")) {
    if (bias->size() != w[0])
      return nodeError(node, "its 'bias' has " + Twine(bias->size()) + " values for " +
                                 Twine(w[0]) + " output channels"),
             failure();
    biasValue = parameter(node, "bias", {w[0]},
                          SmallVector<float>(bias->values.begin(), bias->values.end()));
  }
  return Value(snn::Conv2dOp::create(builder, nodeLoc(node), stepType(out), input, weightValue,
                                     biasValue, *stride, *padding, *dilation, groups));
}

/// SumPool2d: a depthwise convolution with a frozen all-ones kernel (an exact sum of the
/// window, which an average times its size is not). AvgPool2d: snn.avg_pool2d.
FailureOr<Value> NIRImporter::importPool(const NirNode &node, Value input) {
  auto kernel = pair(node, "kernel_size");
  if (failed(kernel))
    return failure();
  auto stride = pair(node, "stride", (*kernel)[0]);
  auto padding = pair(node, "padding", 0);
  if (failed(stride) || failed(padding))
    return failure();
  SmallVector<int64_t> in = sampleShape(input);
  if (in.size() != 3)
    return nodeError(node, "pools a [channels, height, width] input, not " + formatShape(in)),
           failure();
  SmallVector<int64_t> out{in[0]};
  for (int axis = 0; axis < 2; ++axis) {
    out.push_back(
        windowExtent(in[axis + 1], (*kernel)[axis], (*stride)[axis], (*padding)[axis], 1));
    if (out.back() == 0 || (*kernel)[axis] == 0 || (*stride)[axis] == 0)
      return nodeError(node, "its window does not fit its input " + formatShape(in)), failure();
  }
  Location loc = nodeLoc(node);
  if (node.type == "AvgPool2d")
    return Value(snn::AvgPool2dOp::create(builder, loc, stepType(out), input, *kernel, *stride,
                                          *padding, /*ceil_mode=*/false,
                                          /*count_include_pad=*/true));
  // The frozen kernel holds C * kh * kw values: a window beyond any real pooling is refused
  // before it is allocated.
  if (in[0] * (*kernel)[0] * (*kernel)[1] > (int64_t(1) << 26))
    return nodeError(node, "its window of " + formatShape(*kernel) + " over " + Twine(in[0]) +
                               " channels is too large"),
           failure();
  SmallVector<int64_t> shape{in[0], 1, (*kernel)[0], (*kernel)[1]};
  SmallVector<float> ones(size_t(in[0] * (*kernel)[0] * (*kernel)[1]), 1.0f);
  Value sumKernel = parameter(node, "sum_kernel", shape, ones, /*frozen=*/true);
  return Value(snn::Conv2dOp::create(builder, loc, stepType(out), input, sumKernel, Value(),
                                     *stride, *padding, ArrayRef<int64_t>{1, 1}, in[0]));
}

/// NIR's start_dim and end_dim count the dimensions of one sample (no batch).
FailureOr<Value> NIRImporter::importFlatten(const NirNode &node, Value input) {
  SmallVector<int64_t> in = sampleShape(input);
  int64_t rank = int64_t(in.size());
  auto dim = [&](StringRef key, int64_t fallback) -> std::optional<int64_t> {
    const NirArray *array = node.param(key.str());
    if (!array)
      return fallback;
    if (array->size() != 1)
      return std::nullopt;
    int64_t value = int64_t(array->values[0]);
    value = value < 0 ? value + rank : value;
    return value >= 0 && value < rank ? std::optional<int64_t>(value) : std::nullopt;
  };
  std::optional<int64_t> start = dim("start_dim", 0), end = dim("end_dim", -1);
  if (!start || !end || *start > *end)
    return nodeError(node, "its start_dim and end_dim are not dimensions of its input " +
                               formatShape(in)),
           failure();
  if (node.param("input_type")) {
    auto declared = declaredShape(node, "input_type");
    if (failed(declared))
      return failure();
    if (ArrayRef<int64_t>(*declared) != ArrayRef<int64_t>(in))
      return nodeError(node, "declares the input shape " + formatShape(*declared) +
                                 ", but its input is " + formatShape(in)),
             failure();
  }
  SmallVector<int64_t> out(in.begin(), in.begin() + *start);
  out.push_back(1);
  for (int64_t d = *start; d <= *end; ++d)
    out.back() *= in[d];
  out.append(in.begin() + *end + 1, in.end());
  if (out.size() == 1)
    return Value(snn::FlattenOp::create(builder, nodeLoc(node), stepType(out), input));
  return Value(snn::ReshapeOp::create(builder, nodeLoc(node), stepType(out), input, out));
}

/// Scale (s I, s per neuron): a frozen weight that multiplies each value by its own factor
/// and adds nothing else, exactly: [F] features through a diagonal snn.linear, [C, H, W]
/// through a 1x1 depthwise snn.conv2d (s the same across each channel's plane).
FailureOr<Value> NIRImporter::importScale(const NirNode &node, Value input) {
  SmallVector<int64_t> in = sampleShape(input);
  const NirArray *scale = node.param("scale");
  if (!scale || scale->size() == 0)
    return nodeError(node, "has no parameter 'scale'"), failure();
  auto at = [&](int64_t i) { return float(scale->values[scale->size() == 1 ? 0 : size_t(i)]); };
  int64_t count = 1;
  for (int64_t d : in)
    count *= d;
  if (scale->size() != 1 && scale->size() != count)
    return nodeError(node, "parameter 'scale' has " + Twine(scale->size()) +
                               " values for an input of shape " + formatShape(in)),
           failure();
  if (in.size() == 1) {
    // A diagonal [F, F] weight: beyond 8192 features it would outweigh any layer around it.
    if (in[0] > 8192)
      return nodeError(node, "scales " + Twine(in[0]) +
                                 " features (at most 8192 are "
                                 "supported)"),
             failure();
    SmallVector<float> diagonal(size_t(in[0] * in[0]), 0.0f);
    for (int64_t i = 0; i < in[0]; ++i)
      diagonal[size_t(i * in[0] + i)] = at(i);
    Value weight = parameter(node, "scale", {in[0], in[0]}, diagonal, /*frozen=*/true);
    return Value(
        snn::LinearOp::create(builder, nodeLoc(node), input.getType(), input, weight, Value()));
  }
  int64_t plane = in.size() == 3 ? in[1] * in[2] : 0;
  SmallVector<float> factors;
  for (int64_t c = 0; plane && c < in[0]; ++c) {
    factors.push_back(at(c * plane));
    for (int64_t k = 1; k < plane; ++k)
      if (at(c * plane + k) != factors.back())
        return nodeError(node, "its scale differs within channel " + Twine(c) +
                                   " (a [channels, height, width] input takes one factor per "
                                   "channel)"),
               failure();
  }
  if (!plane)
    return nodeError(node, "scales a [features] or [channels, height, width] input, not " +
                               formatShape(in)),
           failure();
  Value weight = parameter(node, "scale", {in[0], 1, 1, 1}, factors, /*frozen=*/true);
  return Value(snn::Conv2dOp::create(builder, nodeLoc(node), input.getType(), input, weight,
                                     Value(), ArrayRef<int64_t>{1, 1}, ArrayRef<int64_t>{0, 0},
                                     ArrayRef<int64_t>{1, 1}, in[0]));
}

ArrayAttr strings(Builder &builder, const std::vector<std::string> &items) {
  return builder.getStrArrayAttr(SmallVector<StringRef>(items.begin(), items.end()));
}

/// The recurrent weight [F, F] and bias [F] of `affine`, fed back into `neuron` of `shape`;
/// a Linear's bias a frozen zero.
FailureOr<std::pair<Value, Value>> NIRImporter::feedbackWeights(const NirNode &neuron,
                                                                const NirNode &affine,
                                                                ArrayRef<int64_t> shape) {
  if (shape.size() != 1)
    return nodeError(neuron, "is fed back through '" + affine.name +
                                 "', which needs neurons of one dimension, not " +
                                 formatShape(shape)),
           failure();
  int64_t features = shape[0];
  const NirArray *weight = affine.param("weight");
  if (!weight || weight->shape != std::vector<int64_t>{features, features})
    return nodeError(affine, "feeds '" + neuron.name + "' back into itself, so its 'weight' must be [" +
                                 Twine(features) + ", " + Twine(features) + "]"),
           failure();
  const NirArray *bias = affine.param("bias");
  if (affine.type == "Affine" && (!bias || bias->size() != features))
    return nodeError(affine, "needs a 'bias' of " + Twine(features) + " values"), failure();
  SmallVector<float> w(weight->values.begin(), weight->values.end());
  SmallVector<float> b(size_t(features), 0.0f);
  if (bias && affine.type == "Affine")
    b.assign(bias->values.begin(), bias->values.end());
  Value weightValue = parameter(affine, "weight", {features, features}, w);
  Value biasValue = parameter(affine, "bias", {features}, b, /*frozen=*/affine.type == "Linear");
  return std::make_pair(weightValue, biasValue);
}

FailureOr<Value> NIRImporter::importNeuron(const NirNode &node, Value input) {
  SmallVector<int64_t> in = sampleShape(input);
  auto described = snn::nir::describeNeuronPrimitive(
      node, std::vector<int64_t>(in.begin(), in.end()), options.dt);
  if (!described.error.empty())
    return nodeError(node, described.error), failure();
  const snn::nir::NeuronParts &p = described.parts;
  StringAttr fire = p.fire ? builder.getStringAttr(*p.fire) : StringAttr();
  // NIR says nothing of gradients: SpikingJelly's default surrogate, sigmoid with alpha 4.
  auto surrogate = snn::SurrogateKindAttr::get(context, snn::SurrogateKind::sigmoid);
  // A parameter with one value per channel: a frozen [C] weight NODE.NAME.
  SmallVector<Value> operands;
  for (auto [name, values] : llvm::zip(p.operands, p.operandValues))
    operands.push_back(parameter(node, name, {int64_t(values.size())},
                                 SmallVector<float>(values.begin(), values.end()),
                                 /*frozen=*/true));
  auto fedBack = graphOrder.feedback.find(node.name);
  if (fedBack != graphOrder.feedback.end()) {
    auto weights = feedbackWeights(node, *fedBack->second, in);
    if (failed(weights))
      return failure();
    return Value(snn::RecurrentNeuronOp::create(
        builder, nodeLoc(node), input.getType(), input, weights->first, weights->second, operands,
        strings(builder, p.states), strings(builder, p.constants), strings(builder, p.operands),
        strings(builder, p.charge), fire, builder.getStringAttr(p.reset),
        builder.getBoolAttr(false), strings(builder, p.update), builder.getStringAttr(p.output),
        surrogate, builder.getF32FloatAttr(4.0f), FloatAttr()));
  }
  return Value(snn::NeuronOp::create(
      builder, nodeLoc(node), input.getType(), input, operands, strings(builder, p.states),
      strings(builder, p.constants), strings(builder, p.operands), strings(builder, p.charge), fire,
      builder.getStringAttr(p.reset), builder.getBoolAttr(false), strings(builder, p.update),
      builder.getStringAttr(p.output), surrogate, builder.getF32FloatAttr(4.0f), FloatAttr()));
}

FailureOr<Value> NIRImporter::importLayer(const NirNode &node, Value input) {
  const std::string &type = node.type;
  if (type == "Affine" || type == "Linear")
    return importAffine(node, input);
  if (type == "Conv2d")
    return importConv2d(node, input);
  if (type == "SumPool2d" || type == "AvgPool2d")
    return importPool(node, input);
  if (type == "Flatten")
    return importFlatten(node, input);
  if (type == "Scale")
    return importScale(node, input);
  if (snn::nir::isNeuronPrimitive(type))
    return importNeuron(node, input);
  return nodeError(node, "the primitive is not supported (supported: " + Twine(kSupported) + ")"),
         failure();
}

LogicalResult NIRImporter::importNode(const NirNode &node) {
  if (node.type == "Input")
    return success(); // a function argument, bound before
  if (node.type != "Output" && sources[node.name].empty())
    return nodeError(node, "has no input (no edge ends at it)");
  auto input = nodeInput(node);
  if (failed(input))
    return failure();
  if (node.type == "Output") {
    values[node.name] = *input;
    return success();
  }
  auto output = importLayer(node, *input);
  if (failed(output))
    return failure();
  values[node.name] = *output;
  return success();
}

OwningOpRef<ModuleOp> NIRImporter::import() {
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  module->getOperation()->setAttr("snn.source", builder.getStringAttr(path));
  auto sorted = order();
  if (failed(sorted))
    return nullptr;
  SmallVector<const NirNode *> inputs, outputs;
  for (const NirNode &node : graph.nodes) {
    if (node.type == "Input")
      inputs.push_back(&node);
    if (node.type == "Output")
      outputs.push_back(&node);
  }
  if (inputs.empty() || outputs.empty())
    return emitError(fileLoc, "the NIR graph has no Input or no Output node"), nullptr;
  SmallVector<Type> argTypes;
  for (const NirNode *node : inputs) {
    if (!sources[node->name].empty())
      return nodeError(*node, "an Input has no edges into it"), nullptr;
    auto shape = declaredShape(*node, "shape");
    if (failed(shape))
      return nullptr;
    argTypes.push_back(stepType(*shape));
  }
  builder.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(builder, fileLoc, "main", builder.getFunctionType(argTypes, {}));
  Block *body = func.addEntryBlock();
  for (auto [index, node] : llvm::enumerate(inputs)) {
    values[node->name] = body->getArgument(index);
    func.setArgAttr(index, "snn.name", builder.getStringAttr(node->name));
  }
  builder.setInsertionPointToEnd(body);
  for (const NirNode *node : *sorted)
    if (failed(importNode(*node)))
      return nullptr;
  SmallVector<Value> results;
  for (const NirNode *node : outputs) {
    Value value = values.lookup(node->name);
    if (node->param("shape")) {
      auto shape = declaredShape(*node, "shape");
      if (failed(shape))
        return nullptr;
      if (ArrayRef<int64_t>(*shape) != ArrayRef<int64_t>(sampleShape(value)))
        return nodeError(*node, "declares the shape " + formatShape(*shape) +
                                    ", but the graph computes " + formatShape(sampleShape(value))),
               nullptr;
    }
    results.push_back(value);
  }
  func::ReturnOp::create(builder, fileLoc, results);
  func.setType(builder.getFunctionType(argTypes, ValueRange(results).getTypes()));
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

} // namespace

OwningOpRef<ModuleOp> snn::importNIRFile(MLIRContext *context, StringRef path,
                                         const NIRImportOptions &options) {
  context->loadDialect<snn::SNNDialect, arith::ArithDialect, func::FuncDialect>();
  if (options.dt && !(*options.dt > 0 && std::isfinite(*options.dt)))
    return emitError(FileLineColLoc::get(context, path, 0, 0),
                     "the time step (--nir-dt) must be a number > 0, got " +
                         formatNumber(*options.dt)),
           nullptr;
  nir::NirReadResult read = nir::readNIRFile(path.str());
  if (!read.error.empty())
    return emitError(UnknownLoc::get(context), read.error), nullptr;
  return NIRImporter(context, path, read.graph, options).import();
}
