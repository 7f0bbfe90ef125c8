//===- OnnxLoader.cpp - Program ONNX file -> Graph -------------------------===//
//
// A truncated protobuf often still parses (a cut at a field boundary is a
// valid, shorter message), so besides the parse result the loader checks what
// every artifact program has: a graph with outputs, the spikemesh opset after
// the graph, and initializers whose data matches their dims.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Execution/OnnxLoader.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/DurableFile.h"
#include "snn/Schema/ArtifactOps.h"

#include <ATen/ops/empty.h>
#include <onnx/onnx_pb.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace snn::runtime {

namespace {

[[noreturn]] void fail(const std::string &name, const std::string &message) {
  throw Error(name + ": " + message);
}

void checkOpset(const onnx::ModelProto &model, const std::string &name) {
  for (const auto &opset : model.opset_import()) {
    if (opset.domain() != schema::kArtifactDomain)
      continue;
    if (opset.version() > schema::kArtifactOpsetVersion)
      fail(name, "opset '" + std::string(schema::kArtifactDomain) + "' version " +
                     std::to_string(opset.version()) +
                     " is newer than this snn-run supports (" +
                     std::to_string(schema::kArtifactOpsetVersion) + ")");
    return;
  }
  fail(name, "no opset import for domain 'spikemesh' (truncated file or not "
             "a SpikeMesh program)");
}

Attribute convertAttribute(const onnx::AttributeProto &proto,
                           const std::string &where) {
  Attribute attribute;
  switch (proto.type()) {
  case onnx::AttributeProto::FLOAT:
    attribute.kind = Attribute::Kind::Float;
    attribute.f = proto.f();
    break;
  case onnx::AttributeProto::INT:
    attribute.kind = Attribute::Kind::Int;
    attribute.i = proto.i();
    break;
  case onnx::AttributeProto::STRING:
    attribute.kind = Attribute::Kind::String;
    attribute.s = proto.s();
    break;
  case onnx::AttributeProto::FLOATS:
    attribute.kind = Attribute::Kind::Floats;
    attribute.floats.assign(proto.floats().begin(), proto.floats().end());
    break;
  case onnx::AttributeProto::INTS:
    attribute.kind = Attribute::Kind::Ints;
    attribute.ints.assign(proto.ints().begin(), proto.ints().end());
    break;
  case onnx::AttributeProto::STRINGS:
    attribute.kind = Attribute::Kind::Strings;
    attribute.strings.assign(proto.strings().begin(), proto.strings().end());
    break;
  default:
    throw Error(where + ": attribute '" + proto.name() +
                "' has an unsupported type");
  }
  return attribute;
}

bool takesAttribute(const schema::ArtifactOp &op, const std::string &name) {
  for (const char *attribute : op.attributes)
    if (name == attribute)
      return true;
  return false;
}

std::string attributeList(const schema::ArtifactOp &op) {
  std::string text;
  for (const char *attribute : op.attributes)
    text += (text.empty() ? "" : ", ") + std::string(attribute);
  return text.empty() ? "none" : text;
}

Node convertNode(const onnx::NodeProto &proto, size_t index,
                 const std::string &name) {
  Node node;
  node.opType = proto.op_type();
  node.domain = proto.domain();
  // Unnamed nodes still need a name that points at them in messages.
  node.name = proto.name().empty() ? node.opType + "#" + std::to_string(index)
                                   : proto.name();
  node.inputs.assign(proto.input().begin(), proto.input().end());
  node.outputs.assign(proto.output().begin(), proto.output().end());
  std::string where = name + ": " + node.describe();
  if (node.domain != schema::kArtifactDomain)
    throw Error(where + " is in domain '" + node.domain +
                "', not 'spikemesh'");
  const schema::ArtifactOp *op = schema::findArtifactOp(node.opType);
  for (const auto &attribute : proto.attribute()) {
    // A kernel reads only the attributes its op defines, so any other would be ignored
    // silently (an edited program, or one of another exporter). An unknown op_type is the
    // executor's to report.
    if (op && !takesAttribute(*op, attribute.name()))
      throw Error(where + " has attribute '" + attribute.name() + "', which " + node.opType +
                  " does not take (it takes " + attributeList(*op) + ")");
    node.attributes[attribute.name()] = convertAttribute(attribute, where);
  }
  return node;
}

at::Tensor convertInitializer(const onnx::TensorProto &proto,
                              const std::string &name) {
  std::string where = name + ": initializer '" + proto.name() + "'";
  if (proto.data_type() != onnx::TensorProto::FLOAT)
    throw Error(where + " is not float32");
  if (proto.data_location() == onnx::TensorProto::EXTERNAL)
    throw Error(where + " uses external data, which snn-run does not read");
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  int64_t count = 1;
  for (int64_t dim : dims) {
    if (dim < 0 || (dim > 0 && count > (int64_t(1) << 40) / dim))
      throw Error(where + " has invalid dims");
    count *= dim;
  }
  at::Tensor tensor = at::empty(dims, at::kFloat);
  size_t bytes = size_t(count) * sizeof(float);
  // The host is little-endian, as ONNX's raw_data is.
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != bytes)
      throw Error(where + " has " + std::to_string(proto.raw_data().size()) +
                  " bytes of raw_data, its dims need " +
                  std::to_string(bytes) + " (truncated file?)");
    std::memcpy(tensor.data_ptr<float>(), proto.raw_data().data(), bytes);
  } else {
    if (proto.float_data_size() != count)
      throw Error(where + " has " + std::to_string(proto.float_data_size()) +
                  " float_data values, its dims need " +
                  std::to_string(count) + " (truncated file?)");
    std::copy(proto.float_data().begin(), proto.float_data().end(),
              tensor.data_ptr<float>());
  }
  return tensor;
}

/// The declared shape of a tensor-typed value, if its type has one: a
/// dimension without dim_value (a dim_param such as "N", or none) is -1.
void recordShape(const onnx::ValueInfoProto &value, Graph &graph) {
  if (!value.type().has_tensor_type() ||
      !value.type().tensor_type().has_shape())
    return;
  std::vector<int64_t> shape;
  for (const auto &dim : value.type().tensor_type().shape().dim())
    shape.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
  graph.valueShapes[value.name()] = std::move(shape);
}

/// Every program has outputs, except a pipeline stage before the last,
/// which hands its values on with send nodes instead.
bool hasSendNode(const Graph &graph) {
  for (const Node &node : graph.nodes)
    if (node.opType == schema::op::kSend)
      return true;
  return false;
}

void convertGraph(const onnx::GraphProto &proto, const std::string &name,
                  Graph &graph) {
  for (const auto &initializer : proto.initializer())
    if (!graph.initializers
             .emplace(initializer.name(), convertInitializer(initializer, name))
             .second)
      fail(name, "initializer '" + initializer.name() + "' is defined twice");
  // Old exporters list initializers among the graph inputs too.
  for (const auto &input : proto.input())
    if (!graph.initializers.count(input.name()))
      graph.inputs.push_back(input.name());
  for (const auto &output : proto.output())
    graph.outputs.push_back(output.name());
  for (const auto *list : {&proto.input(), &proto.output(), &proto.value_info()})
    for (const auto &value : *list)
      recordShape(value, graph);
  for (int i = 0; i < proto.node_size(); ++i)
    graph.nodes.push_back(convertNode(proto.node(i), size_t(i), name));
  if (graph.outputs.empty() && !hasSendNode(graph))
    fail(name, "graph has no outputs and no send node (truncated file?)");
}

} // namespace

Graph parseOnnxProgram(const std::string &bytes, const std::string &name) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes))
    fail(name, "not a valid ONNX model (truncated or corrupt protobuf)");
  if (!model.has_graph())
    fail(name, "not an ONNX model (no graph)");
  checkOpset(model, name);
  Graph graph;
  graph.file = name;
  for (const auto &entry : model.metadata_props())
    graph.metadata[entry.key()] = entry.value();
  convertGraph(model.graph(), name, graph);
  return graph;
}

Graph loadOnnxProgram(const std::string &path) {
  requireRegularFile(path);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(path, std::string("cannot open: ") + std::strerror(errno));
  std::stringstream bytes;
  bytes << in.rdbuf();
  if (in.bad())
    fail(path, "read failed");
  return parseOnnxProgram(bytes.str(), path);
}

} // namespace snn::runtime
