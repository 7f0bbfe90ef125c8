//===- Graph.h - A loaded program, independent of protobuf ------*- C++ -*-===//
//
// The ONNX loader converts the ModelProto into these small structs so that the
// executor and the op kernels never see protobuf types.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_GRAPH_H
#define SNN_RUNTIME_EXECUTION_GRAPH_H

#include <ATen/core/Tensor.h>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace snn::runtime {

/// An ONNX node attribute, restricted to the kinds the artifact uses.
struct Attribute {
  enum class Kind { Float, Int, String, Floats, Ints, Strings };
  Kind kind = Kind::Int;
  float f = 0.0f;
  int64_t i = 0;
  std::string s;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
};

/// Returns "float", "int", ... for messages.
const char *attributeKindName(Attribute::Kind kind);

/// The value as text that tells any two values apart: "0.5", "[1, 2]", "atan".
std::string formatAttributeValue(const Attribute &attribute);

/// One operation of a program. An empty input name is an absent optional one.
struct Node {
  std::string name;
  std::string opType;
  std::string domain;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::map<std::string, Attribute> attributes;

  /// "node 'conv1' (conv2d)" for messages.
  std::string describe() const;
};

/// A program: nodes in topological order, graph inputs that are not
/// initializers, graph outputs, and the initializers as float32 tensors.
struct Graph {
  std::string file; // where it was loaded from, for messages
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<Node> nodes;
  std::map<std::string, at::Tensor> initializers;
  /// Declared shapes of values (graph inputs, outputs and value_info) whose
  /// type carries one; -1 for a dimension without a fixed size. A pipeline
  /// stage's recv outputs need theirs: the receiver allocates the buffer.
  std::map<std::string, std::vector<int64_t>> valueShapes;
  /// The model's metadata_props (key -> value), e.g. the mesh coordinate of a
  /// per-rank program (schema::kMeshCoordinateKey).
  std::map<std::string, std::string> metadata;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_GRAPH_H
