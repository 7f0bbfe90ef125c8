//===- NirExport.cpp - A trained program as a NIR graph -------------------===//
//
// The inverse of the compiler's NIR import (lib/Import/NIR): each node of a whole-model
// program becomes the NIR primitive that imports back to it, with its trained weights. The
// neuron descriptions are matched against the importer's own discretisation
// (snn::nir::matchNeuronPrimitive), so what this writes re-imports to the same program.
//
//===----------------------------------------------------------------------===//
#include "snn/Runtime/Checkpoint/NirExport.h"

#include "snn/NIR/NIRGraph.h"
#include "snn/NIR/NIRNeurons.h"
#include "snn/Runtime/Execution/NodeAttributes.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Schema/ArtifactOps.h"
#include "snn/Schema/NeuronProgram.h"

#include <ATen/ops/all.h>
#include <ATen/ops/diagonal.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/expand.h>
#include <ATen/ops/reshape.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <map>

namespace snn::runtime {

namespace {

using nir::NirArray;
using nir::NirGraph;
using nir::NirNode;
namespace op = schema::op;
namespace attr = schema::attr;

using Shape = std::vector<int64_t>;

NirArray arrayOf(const at::Tensor &tensor) {
  at::Tensor t = tensor.detach().to(at::kDouble).contiguous();
  const double *data = t.data_ptr<double>();
  return NirArray{Shape(t.sizes().begin(), t.sizes().end()),
                  std::vector<double>(data, data + t.numel())};
}

int64_t elementCount(const Shape &shape) {
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  return count;
}

NirArray filled(const Shape &shape, double value) {
  return NirArray{shape, std::vector<double>(size_t(elementCount(shape)), value)};
}

NirArray wholeNumbers(const Shape &values) {
  return NirArray{{int64_t(values.size())}, std::vector<double>(values.begin(), values.end())};
}

NirArray wholeNumber(int64_t value) { return NirArray{{}, {double(value)}}; }

int64_t windowExtent(int64_t size, int64_t kernel, int64_t stride, int64_t padding,
                     int64_t dilation) {
  return (size + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1;
}

class NirBuilder {
public:
  NirBuilder(const Graph &program, const ParameterStore &store, double dt)
      : program(program), store(store), dt(dt) {}

  NirGraph build();

private:
  at::Tensor value(const std::string &name) const;
  void connect(const std::string &value, const std::string &target);
  void layer(const Node &node, const Shape &in);
  Shape linear(const Node &node, const Shape &in, NirNode &out);
  Shape conv2d(const Node &node, const Shape &in, NirNode &out);
  Shape avgPool(const Node &node, const Shape &in, NirNode &out);
  void neuron(const Node &node, const Shape &in, NirNode &out);
  void feedback(const Node &node, const Shape &in);
  NirNode describedNeuron(const Node &node);
  NirNode lifNeuron(double tau, bool decayInput, double vThreshold, double vReset);

  const Graph &program;
  const ParameterStore &store;
  double dt;
  /// Each value's shape of one sample (no T, N) and the NIR nodes whose outputs sum to it.
  std::map<std::string, Shape> shapes;
  std::map<std::string, std::vector<std::string>> producers;
  NirGraph graph;
};

at::Tensor NirBuilder::value(const std::string &name) const {
  if (store.contains(name))
    return store.get(name);
  auto it = program.initializers.find(name);
  if (it == program.initializers.end())
    throw Error("NIR export: the program has no value '" + name + "'");
  return it->second;
}

void NirBuilder::connect(const std::string &value, const std::string &target) {
  for (const std::string &source : producers.at(value))
    graph.edges.emplace_back(source, target);
}

/// Whether `name` is the frozen factor weight the importer makes of a Scale node.
bool isScaleWeight(const std::string &name) {
  const std::string suffix = ".scale";
  return name.size() > suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Shape NirBuilder::linear(const Node &node, const Shape &in, NirNode &out) {
  at::Tensor weight = value(node.inputs[1]);
  if (in.size() != 1)
    throw Error(node.describe() + ": NIR's Affine takes one dimension, its input has " +
                std::to_string(in.size()));
  bool bias = node.inputs.size() > 2 && !node.inputs[2].empty();
  if (!bias && isScaleWeight(node.inputs[1]) && weight.size(0) == weight.size(1)) {
    out.type = "Scale";
    out.params["scale"] = arrayOf(weight.diagonal());
    return in;
  }
  out.params["weight"] = arrayOf(weight);
  out.type = bias ? "Affine" : "Linear";
  if (bias)
    out.params["bias"] = arrayOf(value(node.inputs[2]));
  return {weight.size(0)};
}

/// Conv2d, or SumPool2d / Scale for the frozen depthwise kernels the importer makes of them.
Shape NirBuilder::conv2d(const Node &node, const Shape &in, NirNode &out) {
  NodeAttributes attributes(node);
  auto stride = attributes.getPair(attr::kStride, {1, 1});
  auto padding = attributes.getPair(attr::kPadding, {0, 0});
  auto dilation = attributes.getPair(attr::kDilation, {1, 1});
  int64_t groups = attributes.getInt(attr::kGroups, 1);
  at::Tensor weight = value(node.inputs[1]);
  bool bias = node.inputs.size() > 2 && !node.inputs[2].empty();
  if (in.size() != 3)
    throw Error(node.describe() + ": its input is not [channels, height, width]");
  Shape result{weight.size(0)};
  for (int axis = 0; axis < 2; ++axis)
    result.push_back(windowExtent(in[size_t(axis) + 1], weight.size(axis + 2), stride[axis],
                                  padding[axis], dilation[axis]));
  Shape kernel{weight.size(2), weight.size(3)};
  bool sum = !bias && groups == in[0] && weight.size(0) == in[0] && weight.size(1) == 1 &&
             dilation == std::array<int64_t, 2>{1, 1} && at::all(at::eq(weight, 1.0)).item<bool>();
  if (!bias && isScaleWeight(node.inputs[1]) && groups == in[0] && weight.size(1) == 1 &&
      kernel == Shape{1, 1}) {
    out.type = "Scale";
    out.params["scale"] = arrayOf(weight.reshape({in[0], 1, 1}).expand({in[0], in[1], in[2]}));
    return in;
  }
  out.params["stride"] = wholeNumbers({stride[0], stride[1]});
  out.params["padding"] = wholeNumbers({padding[0], padding[1]});
  if (sum) {
    out.type = "SumPool2d";
    out.params["kernel_size"] = wholeNumbers(kernel);
    return result;
  }
  out.type = "Conv2d";
  out.params["weight"] = arrayOf(weight);
  out.params["bias"] = bias ? arrayOf(value(node.inputs[2])) : filled({weight.size(0)}, 0.0);
  out.params["dilation"] = wholeNumbers({dilation[0], dilation[1]});
  out.params["groups"] = wholeNumber(groups);
  out.params["input_shape"] = wholeNumbers({in[1], in[2]});
  return result;
}

Shape NirBuilder::avgPool(const Node &node, const Shape &in, NirNode &out) {
  NodeAttributes attributes(node);
  auto kernel = attributes.getPair(attr::kKernelSize);
  auto stride = attributes.getPair(attr::kStride, kernel);
  auto padding = attributes.getPair(attr::kPadding, {0, 0});
  if (attributes.getBool(attr::kCeilMode, false) ||
      ((padding[0] || padding[1]) && !attributes.getBool(attr::kCountIncludePad, true)))
    throw Error(node.describe() + ": NIR's AvgPool2d neither rounds up nor leaves padding "
                                  "out of the mean");
  out.type = "AvgPool2d";
  out.params["kernel_size"] = wholeNumbers({kernel[0], kernel[1]});
  out.params["stride"] = wholeNumbers({stride[0], stride[1]});
  out.params["padding"] = wholeNumbers({padding[0], padding[1]});
  return {in[0], windowExtent(in[1], kernel[0], stride[0], padding[0], 1),
          windowExtent(in[2], kernel[1], stride[1], padding[1], 1)};
}

/// SpikingJelly's LIF as NIR's: tau v' = (v_reset - v) + r I with tau = tau_SJ dt, and r 1
/// when the input decays with the membrane, tau_SJ when it is added whole.
NirNode NirBuilder::lifNeuron(double tau, bool decayInput, double vThreshold, double vReset) {
  NirNode out;
  out.type = "LIF";
  out.params["tau"] = NirArray{{}, {tau * dt}};
  out.params["r"] = NirArray{{}, {decayInput ? 1.0 : tau}};
  out.params["v_leak"] = NirArray{{}, {vReset}};
  out.params["v_threshold"] = NirArray{{}, {vThreshold}};
  out.params["v_reset"] = NirArray{{}, {vReset}};
  return out;
}

/// A description with per-channel operands is matched one channel at a time (the operands'
/// values as constants); the node's parameters are then [C] arrays of the channels' values.
NirNode NirBuilder::describedNeuron(const Node &node) {
  NodeAttributes attributes(node);
  namespace na = schema::neuron_attr;
  nir::NeuronParts parts;
  parts.states = attributes.getStrings(na::kStates);
  parts.constants = attributes.getStrings(na::kConstants);
  parts.charge = attributes.getStrings(na::kCharge);
  parts.update = attributes.getStrings(na::kUpdate);
  if (node.attributes.count(na::kFire))
    parts.fire = attributes.getString(na::kFire, "");
  parts.reset = attributes.getString(na::kReset, "none");
  parts.output = attributes.getString(na::kOutput, "s");
  std::vector<std::string> operands = attributes.getStrings(na::kOperands);
  std::vector<at::Tensor> values;
  int64_t channels = 1;
  // A recurrent neuron's operands follow its input, weight and bias.
  size_t first = node.opType == op::kRecurrentNeuron ? 3 : 1;
  for (size_t k = 0; k < operands.size(); ++k) {
    values.push_back(value(node.inputs[k + first]).to(at::kDouble).contiguous().reshape({-1}));
    if (operands[k].find('[') != std::string::npos || (k && values[k].numel() != channels))
      throw Error(node.describe() + ": a per-step operand has no NIR parameter");
    channels = values[k].numel();
  }
  NirNode result;
  for (int64_t c = 0; c < channels; ++c) {
    nir::NeuronParts channel = parts;
    for (size_t k = 0; k < operands.size(); ++k) {
      char text[40];
      std::snprintf(text, sizeof(text), "%.17g", values[k][c].item<double>());
      channel.constants.push_back(operands[k] + "=" + text);
    }
    std::optional<NirNode> matched = nir::matchNeuronPrimitive(channel, dt);
    if (!matched || (c && matched->type != result.type))
      throw Error(node.describe() + ": its description is none of NIR's neurons (IF, I, LI, "
                                    "LIF, CubaLI, CubaLIF, Threshold, Delay stepped by "
                                    "--nir-dt)");
    result.type = matched->type;
    for (const auto &[key, array] : matched->params) {
      NirArray &into = result.params[key];
      into.shape = {c + 1};
      into.values.push_back(array.values[0]);
    }
  }
  return result;
}

void NirBuilder::neuron(const Node &node, const Shape &in, NirNode &out) {
  NodeAttributes attributes(node);
  std::optional<float> vReset = attributes.findFloat(attr::kVReset);
  bool described = node.opType == op::kNeuron || node.opType == op::kRecurrentNeuron;
  if (!described && !vReset)
    throw Error(node.describe() + ": a soft reset has no NIR primitive (NIR's neurons reset "
                                  "to v_reset)");
  NirNode scalar;
  if (node.opType == op::kIFNode) {
    scalar.type = "IF";
    scalar.params["r"] = NirArray{{}, {1.0 / dt}};
    scalar.params["v_threshold"] = NirArray{{}, {attributes.getFloat(attr::kVThreshold)}};
    scalar.params["v_reset"] = NirArray{{}, {*vReset}};
  } else if (node.opType == op::kLIFNode || node.opType == op::kPLIFNode) {
    double tau = node.opType == op::kLIFNode
                     ? attributes.getFloat(attr::kTau)
                     : 1.0 + std::exp(-value(node.inputs[1]).item<double>()); // 1 / sigmoid(w)
    scalar = lifNeuron(tau, attributes.getBool(attr::kDecayInput, true),
                       attributes.getFloat(attr::kVThreshold), *vReset);
  } else {
    scalar = describedNeuron(node);
  }
  out.type = scalar.type;
  // One value for all neurons, or one per channel (dim 0) repeated over its plane.
  int64_t count = elementCount(in);
  for (const auto &[key, array] : scalar.params) {
    NirArray &into = out.params[key] = filled(in, array.values[0]);
    int64_t plane = count / array.size();
    for (int64_t i = 0; i < count && array.size() > 1; ++i)
      into.values[size_t(i)] = array.values[size_t(i / plane)];
  }
}

/// A recurrent neuron's feedback as the Affine (a Linear where its bias is a frozen zero)
/// from the neuron back to itself, named as the importer named its weight NODE.weight.
void NirBuilder::feedback(const Node &node, const Shape &in) {
  const std::string &weightName = node.inputs[1], &biasName = node.inputs[2];
  const std::string suffix = ".weight";
  bool named = weightName.size() > suffix.size() &&
               weightName.compare(weightName.size() - suffix.size(), suffix.size(), suffix) == 0;
  NirNode rec;
  rec.name = named ? weightName.substr(0, weightName.size() - suffix.size()) : node.name + ".rec";
  for (const NirNode &existing : graph.nodes)
    if (existing.name == rec.name || rec.name == node.name)
      rec.name = node.name + ".rec";
  at::Tensor bias = value(biasName);
  bool frozen = !store.contains(biasName) || store.entry(biasName).kind != ParameterKind::Parameter;
  bool linear = frozen && at::all(at::eq(bias, 0.0)).item<bool>();
  rec.type = linear ? "Linear" : "Affine";
  rec.params["weight"] = arrayOf(value(weightName));
  if (!linear)
    rec.params["bias"] = arrayOf(bias);
  shapes[rec.name] = in;
  graph.edges.emplace_back(node.name, rec.name);
  graph.edges.emplace_back(rec.name, node.name);
  graph.nodes.push_back(std::move(rec));
}

void NirBuilder::layer(const Node &node, const Shape &in) {
  const std::string &kind = node.opType;
  const std::string &output = node.outputs[0];
  if (kind == op::kAdd) {
    producers[output] = producers.at(node.inputs[0]);
    for (const std::string &source : producers.at(node.inputs[1]))
      producers[output].push_back(source);
    shapes[output] = in;
    return;
  }
  NirNode out;
  out.name = node.name;
  Shape result = in;
  if (kind == op::kLinear)
    result = linear(node, in, out);
  else if (kind == op::kConv2d)
    result = conv2d(node, in, out);
  else if (kind == op::kAvgPool2d)
    result = avgPool(node, in, out);
  else if (kind == op::kFlatten) {
    out.type = "Flatten";
    out.params["start_dim"] = wholeNumber(0);
    out.params["end_dim"] = wholeNumber(-1);
    out.params["input_type"] = wholeNumbers(in);
    result = {elementCount(in)};
  } else if (schema::isStatefulOp(kind))
    neuron(node, in, out);
  else
    throw Error(node.describe() + ": has no NIR primitive (NIR has Affine, Linear, Conv2d, "
                                  "SumPool2d, AvgPool2d, Flatten and its neurons)");
  connect(node.inputs[0], node.name);
  graph.nodes.push_back(std::move(out));
  if (kind == op::kRecurrentNeuron)
    feedback(node, in);
  producers[output] = {node.name};
  shapes[output] = result;
}

NirGraph NirBuilder::build() {
  if (program.inputs.size() != 1 || program.outputs.size() != 1)
    throw Error("NIR export: the program must have one input and one output");
  const std::string &input = program.inputs[0];
  auto declared = program.valueShapes.find(input);
  if (declared == program.valueShapes.end() || declared->second.size() < 3)
    throw Error("NIR export: the program's input '" + input + "' has no [T, N, ...] shape");
  Shape sample(declared->second.begin() + 2, declared->second.end());
  for (int64_t d : sample)
    if (d <= 0)
      throw Error("NIR export: the input's sample shape is not fixed");
  graph.version = "0.2.0";
  graph.nodes.push_back(NirNode{"input", "Input", {{"shape", wholeNumbers(sample)}}, {}});
  shapes[input] = sample;
  producers[input] = {"input"};
  for (const Node &node : program.nodes) {
    if (node.name == "input" || node.name == "output")
      throw Error(node.describe() + ": its name is NIR's Input or Output node's");
    layer(node, shapes.at(node.inputs[0]));
  }
  const std::string &output = program.outputs[0];
  graph.nodes.push_back(
      NirNode{"output", "Output", {{"shape", wholeNumbers(shapes.at(output))}}, {}});
  connect(output, "output");
  return graph;
}

} // namespace

void exportTrainedNir(const Graph &program, const ParameterStore &store, double dt,
                      const std::string &outPath) {
  if (!(dt > 0) || !std::isfinite(dt))
    throw Error("--nir-dt must be a number > 0");
  NirGraph graph = NirBuilder(program, store, dt).build();
  if (std::string error = nir::writeNIRFile(graph, outPath); !error.empty())
    throw Error(error);
}

} // namespace snn::runtime
