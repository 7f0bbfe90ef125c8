//===- NIRWriter.cpp - A NIR graph to its HDF5 file -----------------------===//
//
// Writes the layout NIR's serializer writes and its reader reads (nir/serialization.py):
// /version, /node {type "NIRGraph", nodes/<name>/{type, parameters}, edges [E, 2]}. Strings
// are variable-length UTF-8, whole-number parameters (shapes, strides, groups) int64 and
// every other float32. The file appears complete or not at all: it is written next to its
// name and renamed.
//
//===----------------------------------------------------------------------===//
#include "snn/NIR/NIRGraph.h"

#include "HDF5Handles.h"

#include <cstdio>
#include <set>

namespace snn::nir {

namespace {

bool isWholeNumberParameter(const std::string &key) {
  static const std::set<std::string> keys = {
      "shape",    "input_shape", "input_type",  "stride",    "padding",
      "dilation", "groups",      "kernel_size", "start_dim", "end_dim"};
  return keys.count(key) > 0;
}

bool writeString(hid_t group, const char *name, const std::string &value) {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle dataset(
      H5Dcreate2(group, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      H5Dclose);
  const char *text = value.c_str();
  return dataset.valid() &&
         H5Dwrite(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &text) >= 0;
}

bool writeArray(hid_t group, const std::string &name, const NirArray &array) {
  std::vector<hsize_t> dims(array.shape.begin(), array.shape.end());
  Handle space(dims.empty() ? H5Screate(H5S_SCALAR)
                            : H5Screate_simple(int(dims.size()), dims.data(), nullptr),
               H5Sclose);
  bool whole = isWholeNumberParameter(name);
  hid_t fileType = whole ? H5T_STD_I64LE : H5T_IEEE_F32LE;
  Handle dataset(
      H5Dcreate2(group, name.c_str(), fileType, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      H5Dclose);
  if (!dataset.valid())
    return false;
  if (whole) {
    std::vector<int64_t> values(array.values.begin(), array.values.end());
    return H5Dwrite(dataset.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                    values.data()) >= 0;
  }
  std::vector<float> values(array.values.begin(), array.values.end());
  return H5Dwrite(dataset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >=
         0;
}

bool writeEdges(hid_t graph, const NirGraph &nir) {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  hsize_t dims[2] = {hsize_t(nir.edges.size()), 2};
  Handle space(H5Screate_simple(2, dims, nullptr), H5Sclose);
  Handle dataset(
      H5Dcreate2(graph, "edges", type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      H5Dclose);
  std::vector<const char *> names;
  for (const auto &[from, to] : nir.edges) {
    names.push_back(from.c_str());
    names.push_back(to.c_str());
  }
  return dataset.valid() && (names.empty() || H5Dwrite(dataset.get(), type.get(), H5S_ALL, H5S_ALL,
                                                       H5P_DEFAULT, names.data()) >= 0);
}

std::string writeGraph(hid_t file, const NirGraph &nir) {
  if (!writeString(file, "version", nir.version.empty() ? "0.2.0" : nir.version))
    return "cannot write its version";
  Handle graph(H5Gcreate2(file, "node", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  if (!graph.valid() || !writeString(graph.get(), "type", "NIRGraph"))
    return "cannot write its graph";
  Handle nodes(H5Gcreate2(graph.get(), "nodes", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  for (const NirNode &node : nir.nodes) {
    Handle group(H5Gcreate2(nodes.get(), node.name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                 H5Gclose);
    if (!group.valid() || !writeString(group.get(), "type", node.type))
      return "cannot write node '" + node.name + "'";
    for (const auto &[key, array] : node.params)
      if (!writeArray(group.get(), key, array))
        return "cannot write parameter '" + key + "' of node '" + node.name + "'";
    for (const auto &[key, text] : node.strings)
      if (!writeString(group.get(), key.c_str(), text))
        return "cannot write parameter '" + key + "' of node '" + node.name + "'";
  }
  return writeEdges(graph.get(), nir) ? "" : "cannot write its edges";
}

} // namespace

std::string writeNIRFile(const NirGraph &graph, const std::string &path) {
  std::string partial = path + ".partial";
  QuietErrors quiet;
  std::string error;
  {
    Handle file(H5Fcreate(partial.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    error = file.valid() ? writeGraph(file.get(), graph) : "cannot create it";
  }
  if (error.empty() && std::rename(partial.c_str(), path.c_str()) != 0)
    error = "cannot rename " + partial + " to it";
  if (!error.empty()) {
    std::remove(partial.c_str());
    return path + ": " + error;
  }
  return "";
}

} // namespace snn::nir
