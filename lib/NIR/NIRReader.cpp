//===- NIRReader.cpp - A NIR graph from its HDF5 file ---------------------===//
//
// Reads what NIR's serializer writes (nir/serialization.py): /version, and the
// group /node of type "NIRGraph" with /node/nodes/<name>/{type, parameters...}
// and /node/edges, an [E, 2] array of strings. h5py writes a scalar string as
// a fixed-length string and an array of strings as variable-length ones;
// numbers of any class are read as doubles.
//
//===----------------------------------------------------------------------===//
#include "snn/NIR/NIRGraph.h"

#include "HDF5Handles.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>

namespace snn::nir {

namespace {

bool exists(hid_t location, const char *name) { return H5Lexists(location, name, H5P_DEFAULT) > 0; }

/// The strings of a string dataset (any rank), or false.
bool readStrings(hid_t dataset, std::vector<std::string> &out) {
  Handle type(H5Dget_type(dataset), H5Tclose), space(H5Dget_space(dataset), H5Sclose);
  if (!type.valid() || !space.valid() || H5Tget_class(type.get()) != H5T_STRING)
    return false;
  hssize_t count = H5Sget_simple_extent_npoints(space.get());
  if (count < 0)
    return false;
  out.clear();
  if (H5Tis_variable_str(type.get()) > 0) {
    Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.get(), H5T_VARIABLE);
    H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
    std::vector<char *> buffer(size_t(count), nullptr);
    if (H5Dread(dataset, mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()) < 0)
      return false;
    for (char *s : buffer)
      out.emplace_back(s ? s : "");
    H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, buffer.data());
    return true;
  }
  size_t width = H5Tget_size(type.get());
  Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(mem.get(), width);
  H5Tset_strpad(mem.get(), H5T_STR_NULLPAD);
  std::vector<char> buffer(size_t(count) * width + 1, '\0');
  if (H5Dread(dataset, mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()) < 0)
    return false;
  for (hssize_t i = 0; i < count; ++i) {
    const char *begin = buffer.data() + size_t(i) * width;
    out.emplace_back(begin, strnlen(begin, width));
  }
  return true;
}

/// A numeric dataset as doubles with its shape, or false.
bool readArray(hid_t dataset, NirArray &out) {
  Handle type(H5Dget_type(dataset), H5Tclose), space(H5Dget_space(dataset), H5Sclose);
  if (!type.valid() || !space.valid())
    return false;
  H5T_class_t cls = H5Tget_class(type.get());
  if (cls != H5T_INTEGER && cls != H5T_FLOAT)
    return false;
  int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0)
    return false;
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  out.shape.assign(dims.begin(), dims.end());
  hssize_t count = H5Sget_simple_extent_npoints(space.get());
  out.values.assign(size_t(std::max<hssize_t>(count, 0)), 0.0);
  return count == 0 ||
         H5Dread(dataset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.values.data()) >= 0;
}

/// The names of the links in `group`, in name order.
std::vector<std::string> childNames(hid_t group) {
  std::vector<std::string> names;
  auto collect = [](hid_t, const char *name, const H5L_info_t *, void *data) -> herr_t {
    static_cast<std::vector<std::string> *>(data)->push_back(name);
    return 0;
  };
  H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect, &names);
  return names;
}

/// One string of a scalar string dataset `name` in `group`, or false.
bool readString(hid_t group, const char *name, std::string &out) {
  if (!exists(group, name))
    return false;
  Handle dataset(H5Dopen2(group, name, H5P_DEFAULT), H5Dclose);
  std::vector<std::string> strings;
  if (!dataset.valid() || !readStrings(dataset.get(), strings) || strings.size() != 1)
    return false;
  out = strings.front();
  return true;
}

/// Node `name` of /node/nodes: its type and its datasets.
std::string readNode(hid_t nodes, const std::string &name, NirNode &node) {
  node.name = name;
  Handle group(H5Gopen2(nodes, name.c_str(), H5P_DEFAULT), H5Gclose);
  if (!group.valid())
    return "node '" + name + "' is not a group";
  if (!readString(group.get(), "type", node.type))
    return "node '" + name + "' has no string 'type'";
  for (const std::string &field : childNames(group.get())) {
    if (field == "type")
      continue;
    Handle dataset(H5Dopen2(group.get(), field.c_str(), H5P_DEFAULT), H5Dclose);
    if (!dataset.valid())
      continue; // a group: a nested graph's nodes, or metadata, read by whoever needs them
    NirArray array;
    std::vector<std::string> strings;
    if (readArray(dataset.get(), array))
      node.params[field] = std::move(array);
    else if (readStrings(dataset.get(), strings) && strings.size() == 1)
      node.strings[field] = strings.front();
    else
      return "node '" + name + "': parameter '" + field + "' is neither numbers nor a string";
  }
  return "";
}

/// /node/edges: [E, 2] names of existing nodes.
std::string readEdges(hid_t graph, NirGraph &out) {
  if (!exists(graph, "edges"))
    return "";
  Handle dataset(H5Dopen2(graph, "edges", H5P_DEFAULT), H5Dclose);
  Handle space(H5Dget_space(dataset.get()), H5Sclose);
  std::vector<std::string> names;
  hsize_t dims[2] = {0, 0};
  int rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  if (rank == 2)
    H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  bool empty = rank >= 1 && H5Sget_simple_extent_npoints(space.get()) == 0;
  if (!empty && (rank != 2 || dims[1] != 2 || !readStrings(dataset.get(), names)))
    return "'edges' is not an [E, 2] array of node names";
  std::set<std::string> known;
  for (const NirNode &node : out.nodes)
    known.insert(node.name);
  for (size_t i = 0; i + 1 < names.size(); i += 2) {
    for (size_t k = i; k < i + 2; ++k)
      if (!known.count(names[k]))
        return "edge " + std::to_string(i / 2) + " ('" + names[i] + "' -> '" + names[i + 1] +
               "') names no node '" + names[k] + "'";
    out.edges.emplace_back(names[i], names[i + 1]);
  }
  return "";
}

std::string readGraph(hid_t file, NirGraph &out) {
  readString(file, "version", out.version);
  if (!exists(file, "node"))
    return "no NIR graph in it (no group 'node')";
  Handle graph(H5Gopen2(file, "node", H5P_DEFAULT), H5Gclose);
  std::string type;
  if (!graph.valid() || !readString(graph.get(), "type", type) || type != "NIRGraph")
    return "its 'node' is not a NIRGraph (type '" + type + "')";
  if (!exists(graph.get(), "nodes"))
    return "its graph has no 'nodes'";
  Handle nodes(H5Gopen2(graph.get(), "nodes", H5P_DEFAULT), H5Gclose);
  for (const std::string &name : childNames(nodes.get())) {
    NirNode node;
    if (std::string error = readNode(nodes.get(), name, node); !error.empty())
      return error;
    out.nodes.push_back(std::move(node));
  }
  return readEdges(graph.get(), out);
}

} // namespace

bool NirArray::uniform() const {
  return std::all_of(values.begin(), values.end(), [&](double v) { return v == values[0]; });
}

const NirArray *NirNode::param(const std::string &key) const {
  auto it = params.find(key);
  return it == params.end() ? nullptr : &it->second;
}

const NirNode *NirGraph::node(const std::string &name) const {
  for (const NirNode &n : nodes)
    if (n.name == name)
      return &n;
  return nullptr;
}

bool isHDF5File(const std::string &path) {
  static const char kSignature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  std::ifstream in(path, std::ios::binary);
  char head[8] = {};
  return in.read(head, sizeof(head)) && std::memcmp(head, kSignature, sizeof(head)) == 0;
}

NirReadResult readNIRFile(const std::string &path) {
  NirReadResult result;
  std::ifstream probe(path, std::ios::binary);
  if (!probe) {
    result.error = path + ": cannot open it";
    return result;
  }
  if (!isHDF5File(path)) {
    result.error = path + ": not a NIR file (no HDF5 signature)";
    return result;
  }
  QuietErrors quiet;
  Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  std::string error = file.valid() ? readGraph(file.get(), result.graph)
                                   : "HDF5 cannot read it (truncated or damaged)";
  if (!error.empty()) {
    result.graph = NirGraph{};
    result.error = path + ": " + error;
  }
  return result;
}

} // namespace snn::nir
