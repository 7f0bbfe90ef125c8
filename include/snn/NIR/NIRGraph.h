//===- NIRGraph.h - A NIR graph as its file holds it ------------*- C++ -*-===//
//
// NIR (the Neuromorphic Intermediate Representation) stores a graph of
// primitives in HDF5: the group `node` of type "NIRGraph" holds `nodes` (one
// group per node: its `type` and its parameters as datasets) and `edges`
// (pairs of node names). This is that graph as read, before any meaning is
// given to it: every parameter an array of doubles with its shape.
// Plain C++ (no MLIR, no LibTorch): the compiler's importer and the runtime's exporter share it.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_NIR_NIRGRAPH_H
#define SNN_NIR_NIRGRAPH_H

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace snn::nir {

/// A numeric parameter: its values in row-major order and its shape ([] for a
/// scalar).
struct NirArray {
  std::vector<int64_t> shape;
  std::vector<double> values;

  int64_t size() const { return int64_t(values.size()); }
  /// Whether every value is the same (a per-neuron array of one value).
  bool uniform() const;
};

/// One node: its name (the key edges use), its primitive type ("LIF",
/// "Affine", ...), its numeric parameters and its string parameters.
struct NirNode {
  std::string name;
  std::string type;
  std::map<std::string, NirArray> params;
  std::map<std::string, std::string> strings;

  const NirArray *param(const std::string &key) const;
};

struct NirGraph {
  /// The file's NIR version ("0.2.0"), empty if it does not say.
  std::string version;
  /// The nodes in name order.
  std::vector<NirNode> nodes;
  /// Directed edges (source, target) in the file's order.
  std::vector<std::pair<std::string, std::string>> edges;

  const NirNode *node(const std::string &name) const;
};

/// The graph in `path`, or a one-line error naming the file and what is wrong
/// with it (not HDF5, no NIR graph, a node without a type, an edge to a node
/// that is not there, ...).
struct NirReadResult {
  NirGraph graph;
  std::string error;
};
NirReadResult readNIRFile(const std::string &path);

/// Writes `graph` to `path` as NIR's own writer lays it out (whole-number parameters such as
/// shapes and strides as int64, every other as float32). Returns "" or a one-line error
/// naming the file; a failed write leaves no file.
std::string writeNIRFile(const NirGraph &graph, const std::string &path);

/// "[2, 34, 34]", for messages.
std::string formatShape(const std::vector<int64_t> &shape);

/// Whether `path` starts with HDF5's signature (a NIR file, as opposed to an
/// ONNX protobuf): the format is chosen by content, not by the extension.
bool isHDF5File(const std::string &path);

} // namespace snn::nir

#endif // SNN_NIR_NIRGRAPH_H
