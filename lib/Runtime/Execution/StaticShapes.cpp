//===- StaticShapes.cpp - A program's value shapes without running it -----===//
//
// One rule per op, mirroring the kernels' output shapes (LayerOps.cpp,
// PerStepShapeOps.cpp, AttentionOps.cpp, CollectiveOps.cpp). Every rule
// leaves dimensions 0 and 1 (T, N) as they are unless it drops T.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Execution/StaticShapes.h"
#include "snn/Runtime/Execution/NodeAttributes.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Schema/ArtifactOps.h"

#include <algorithm>
#include <array>
#include <optional>

namespace snn::runtime {

namespace attr = schema::attr;
namespace op = schema::op;

namespace {

using Shape = std::optional<StaticShape>;
using Pair = std::array<int64_t, 2>;

/// PyTorch's pooling_output_shape (convolutions: no ceil mode).
std::optional<int64_t> windowOutput(int64_t in, int64_t kernel, int64_t stride,
                                    int64_t padding, int64_t dilation, bool ceil) {
  int64_t span = in + 2 * padding - dilation * (kernel - 1) - 1 + (ceil ? stride - 1 : 0);
  if (in < 0 || span < 0)
    return std::nullopt;
  int64_t out = span / stride + 1;
  if (ceil && (out - 1) * stride >= in + padding)
    --out;
  return out;
}

/// [T, N, C, H, W] -> [T, N, channels, H', W'] for a 2-D window.
Shape windowed(const StaticShape &x, int64_t channels, Pair kernel, Pair stride, Pair padding,
               Pair dilation, bool ceil) {
  if (x.size() != 5)
    return std::nullopt;
  StaticShape out{x[0], x[1], channels, 0, 0};
  for (size_t i = 0; i < 2; ++i) {
    std::optional<int64_t> size =
        windowOutput(x[3 + i], kernel[i], stride[i], padding[i], dilation[i], ceil);
    if (!size)
      return std::nullopt;
    out[3 + i] = *size;
  }
  return out;
}

Shape conv2dShape(const Node &node, const StaticShape &x, const StaticShape &weight) {
  NodeAttributes a(node);
  if (x.size() != 5 || weight.size() != 4)
    return std::nullopt;
  return windowed(x, weight[0], {weight[2], weight[3]}, a.getSizePair(attr::kStride, {1, 1}, 1),
                  a.getSizePair(attr::kPadding, {0, 0}, 0),
                  a.getSizePair(attr::kDilation, {1, 1}, 1), false);
}

Shape poolShape(const Node &node, const StaticShape &x) {
  NodeAttributes a(node);
  if (x.size() != 5)
    return std::nullopt;
  Pair kernel = a.getSizePair(attr::kKernelSize, 1);
  bool isMax = node.opType == op::kMaxPool2d;
  return windowed(x, x[2], kernel, a.getSizePair(attr::kStride, kernel, 1),
                  a.getSizePair(attr::kPadding, {0, 0}, 0),
                  isMax ? a.getSizePair(attr::kDilation, {1, 1}, 1) : Pair{1, 1},
                  a.getBool(attr::kCeilMode, false));
}

/// Elementwise operands broadcast as ATen does; N only against N or 1.
Shape broadcast(const StaticShape &a, const StaticShape &b) {
  StaticShape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t x = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    int64_t y = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (x != y && x != 1 && y != 1)
      return std::nullopt;
    out[i] = x == 1 ? y : x;
  }
  return out;
}

/// The product of per-step dims from `from` on; none may be N.
std::optional<int64_t> perStepProduct(const StaticShape &x, size_t from) {
  int64_t product = 1;
  for (size_t i = from; i < x.size(); ++i) {
    if (x[i] == kBatchSize)
      return std::nullopt;
    product *= x[i];
  }
  return product;
}

Shape reshapeShape(const Node &node, const StaticShape &x) {
  std::vector<int64_t> dims = NodeAttributes(node).getPositiveInts(attr::kShape);
  if (x.size() < 2)
    return std::nullopt;
  StaticShape out{x[0], x[1]};
  out.insert(out.end(), dims.begin(), dims.end());
  return out;
}

Shape reduceMeanShape(const Node &node, const StaticShape &x) {
  NodeAttributes a(node);
  std::vector<int64_t> axes = a.getPositiveInts(attr::kAxes);
  bool keep = a.getBool(attr::kKeepdims, true);
  StaticShape out;
  for (size_t i = 0; i < x.size(); ++i) {
    bool reduced = std::find(axes.begin(), axes.end(), int64_t(i)) != axes.end();
    if (!reduced)
      out.push_back(x[i]);
    else if (keep)
      out.push_back(1);
  }
  return out;
}

/// all_gather multiplies its `axis` by the group's size, all_slice divides it.
Shape gatherOrSlice(const Node &node, const StaticShape &x,
                    const std::map<std::string, int64_t> &axisSizes) {
  NodeAttributes a(node);
  auto members = axisSizes.find(a.getString(attr::kMeshAxis, ""));
  int64_t axis = a.getInt(attr::kAxis);
  if (members == axisSizes.end() || members->second < 1)
    return std::nullopt;
  int64_t rank = int64_t(x.size()), dim = axis < 0 ? axis + rank : axis;
  if (dim < 2 || dim >= rank)
    return std::nullopt;
  StaticShape out = x;
  if (node.opType == op::kAllGather)
    out[size_t(dim)] *= members->second;
  else if (out[size_t(dim)] % members->second == 0)
    out[size_t(dim)] /= members->second;
  else
    return std::nullopt;
  return out;
}

Shape concatShape(const Node &node, const std::vector<StaticShape> &in) {
  int64_t axis = NodeAttributes(node).getIntIn(attr::kAxis, -1, 2, 64);
  StaticShape out = in[0];
  if (axis >= int64_t(out.size()))
    return std::nullopt;
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i].size() != out.size())
      return std::nullopt;
    out[size_t(axis)] += in[i][size_t(axis)];
  }
  return out;
}

/// Ops whose output has the shape of their first input.
bool keepsShape(const std::string &type) {
  for (const char *name :
       {op::kBatchNorm, op::kGroupNorm, op::kDropout, op::kIFNode, op::kLIFNode, op::kPLIFNode,
        op::kNeuron, op::kRecurrentNeuron, op::kParallelNeuron, op::kBiasAdd, op::kAllReduce,
        op::kBackwardAllReduce})
    if (type == name)
      return true;
  return false;
}

Shape layerShape(const Node &node, const std::vector<StaticShape> &in) {
  const std::string &type = node.opType;
  const StaticShape &x = in[0];
  if (type == op::kLinear && in.size() >= 2 && in[1].size() == 2 && !x.empty()) {
    StaticShape out = x;
    out.back() = in[1][0];
    return out;
  }
  if (type == op::kConv2d && in.size() >= 2)
    return conv2dShape(node, x, in[1]);
  if (type == op::kMaxPool2d || type == op::kAvgPool2d)
    return poolShape(node, x);
  if (type == op::kAdaptiveAvgPool2d && x.size() == 5) {
    Pair size = NodeAttributes(node).getSizePair(attr::kOutputSize, 1);
    return StaticShape{x[0], x[1], x[2], size[0], size[1]};
  }
  if (type == op::kFlatten && x.size() >= 3)
    if (std::optional<int64_t> features = perStepProduct(x, 2))
      return StaticShape{x[0], x[1], *features};
  return std::nullopt;
}

Shape outputShape(const Node &node, const std::vector<StaticShape> &in,
                  const std::map<std::string, int64_t> &axisSizes) {
  const std::string &type = node.opType;
  const StaticShape &x = in[0];
  if (keepsShape(type))
    return x;
  if ((type == op::kAdd || type == op::kMul) && in.size() == 2)
    return broadcast(x, in[1]);
  if ((type == op::kMeanTime || type == op::kSumTime) && !x.empty())
    return StaticShape(x.begin() + 1, x.end());
  if (type == op::kReshape)
    return reshapeShape(node, x);
  if (type == op::kReduceMean)
    return reduceMeanShape(node, x);
  if (type == op::kConcat)
    return concatShape(node, in);
  if (type == op::kAllGather || type == op::kAllSlice)
    return gatherOrSlice(node, x, axisSizes);
  if (type == op::kSpikingAttention && x.size() == 4 && x[2] % 3 == 0)
    return StaticShape{x[0], x[1], x[2] / 3, x[3]};
  return layerShape(node, in);
}

} // namespace

std::map<std::string, StaticShape>
inferStaticShapes(const Graph &program, const StaticShape &inputShape,
                  const std::map<std::string, int64_t> &axisSizes) {
  std::map<std::string, StaticShape> shapes;
  for (const std::string &input : program.inputs)
    if (!inputShape.empty())
      shapes[input] = inputShape;
  for (const auto &[name, tensor] : program.initializers)
    shapes[name] = tensor.sizes().vec();
  for (const Node &node : program.nodes) {
    if (node.outputs.size() != 1)
      continue; // send: no output
    if (node.opType == op::kRecv) {
      if (auto declared = program.valueShapes.find(node.outputs[0]);
          declared != program.valueShapes.end())
        shapes[node.outputs[0]] = declared->second;
      continue;
    }
    std::vector<StaticShape> in;
    bool known = !node.inputs.empty();
    for (const std::string &name : node.inputs) {
      auto it = shapes.find(name);
      known = known && (name.empty() || it != shapes.end()); // "": an absent optional input
      in.push_back(name.empty() || !known ? StaticShape{} : it->second);
    }
    if (!known)
      continue;
    try {
      if (Shape out = outputShape(node, in, axisSizes))
        shapes[node.outputs[0]] = *out;
    } catch (const Error &) {
      // A malformed attribute: the node's kernel builder reports it.
    }
  }
  return shapes;
}

std::string formatStaticShape(const StaticShape &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + (shape[i] == kBatchSize ? std::string("N")
                                                      : std::to_string(shape[i]));
  return text + "]";
}

} // namespace snn::runtime
