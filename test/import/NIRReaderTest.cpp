//===- NIRReaderTest.cpp - NIR files of other libraries, and damaged ones -===//

#include "snn/NIR/NIRGraph.h"

#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace snn::nir;

namespace {

std::string file(const char *name) { return std::string(SNN_NIR_FILES) + "/" + name; }

NirGraph read(const char *name) {
  NirReadResult r = readNIRFile(file(name));
  EXPECT_EQ(r.error, "");
  return r.graph;
}

std::vector<int64_t> shapeOf(const NirGraph &g, const char *node, const char *param) {
  const NirNode *n = g.node(node);
  EXPECT_NE(n, nullptr) << node;
  const NirArray *a = n ? n->param(param) : nullptr;
  EXPECT_NE(a, nullptr) << node << "." << param;
  return a ? a->shape : std::vector<int64_t>{-1};
}

/// A scratch HDF5 file built with HDF5's C API, removed afterwards.
class ScratchFile {
public:
  ScratchFile() : path_(std::filesystem::temp_directory_path() / "snn-nir-reader-test.h5") {
    file_ = H5Fcreate(path_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  }
  ~ScratchFile() { std::filesystem::remove(path_); }

  void group(const char *name) {
    H5Gclose(H5Gcreate2(file_, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  }
  void string(const char *name, const std::string &value) {
    hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, value.size());
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t d = H5Dcreate2(file_, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, value.data());
    H5Dclose(d);
    H5Sclose(space);
    H5Tclose(type);
  }
  /// [rows, 2] fixed-width names.
  void edges(const char *name, const std::vector<std::string> &names) {
    size_t width = 8;
    std::vector<char> buffer(names.size() * width, '\0');
    for (size_t i = 0; i < names.size(); ++i)
      names[i].copy(buffer.data() + i * width, width);
    hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, width);
    hsize_t dims[2] = {names.size() / 2, 2};
    hid_t space = H5Screate_simple(2, dims, nullptr);
    hid_t d = H5Dcreate2(file_, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data());
    H5Dclose(d);
    H5Sclose(space);
    H5Tclose(type);
  }
  /// Closes the file and reads it back.
  std::string error() {
    H5Fclose(file_);
    file_ = -1;
    return readNIRFile(path_.string()).error;
  }
  std::string path() const { return path_.string(); }

private:
  std::filesystem::path path_;
  hid_t file_ = -1;
};

} // namespace

TEST(NIRReader, NorsesLIF) {
  NirGraph g = read("lif_norse.nir");
  EXPECT_EQ(g.version, "0.1.1");
  ASSERT_EQ(g.nodes.size(), 4u);
  EXPECT_EQ(g.node("0")->type, "Affine");
  EXPECT_EQ(g.node("1")->type, "LIF");
  EXPECT_EQ(g.node("input")->type, "Input");
  // Norse writes float32: the value read is 0.0025 as float32, exactly.
  EXPECT_EQ(g.node("1")->param("tau")->values, std::vector<double>{double(0.0025f)});
  EXPECT_EQ(g.node("1")->param("v_threshold")->shape, std::vector<int64_t>{1});
  EXPECT_EQ(shapeOf(g, "0", "weight"), (std::vector<int64_t>{1, 1}));
  std::vector<std::pair<std::string, std::string>> edges = {
      {"input", "0"}, {"0", "1"}, {"1", "output"}};
  EXPECT_EQ(g.edges, edges);
}

TEST(NIRReader, SinabsCNN) {
  NirGraph g = read("cnn_sinabs.nir");
  EXPECT_EQ(g.version, "0.2.0");
  EXPECT_EQ(g.nodes.size(), 15u);
  EXPECT_EQ(g.edges.size(), 14u);
  EXPECT_EQ(shapeOf(g, "0", "weight"), (std::vector<int64_t>{16, 2, 5, 5}));
  EXPECT_EQ(g.node("0")->param("stride")->values, (std::vector<double>{2, 2}));
  EXPECT_EQ(shapeOf(g, "0", "groups"), std::vector<int64_t>{}); // a scalar
  EXPECT_EQ(g.node("4")->type, "SumPool2d");
  EXPECT_EQ(g.node("8")->param("input_type")->values, (std::vector<double>{8, 4, 4}));
  EXPECT_EQ(g.node("input")->param("shape")->values, (std::vector<double>{2, 34, 34}));
  const NirArray *threshold = g.node("1")->param("v_threshold");
  EXPECT_EQ(threshold->shape, (std::vector<int64_t>{16, 16, 16}));
  EXPECT_TRUE(threshold->uniform());
  EXPECT_FALSE(g.node("0")->param("weight")->uniform());
}

TEST(NIRReader, RecurrentBrailleCubaLIF) {
  NirGraph g = read("braille_noDelay_bias_zero.nir");
  const NirNode *lif = g.node("lif1.lif");
  ASSERT_NE(lif, nullptr);
  EXPECT_EQ(lif->type, "CubaLIF");
  for (const char *p : {"tau_syn", "tau_mem", "r", "v_leak", "v_threshold", "w_in"})
    EXPECT_EQ(shapeOf(g, "lif1.lif", p), std::vector<int64_t>{38}) << p;
  bool recurrent = false;
  for (const auto &[from, to] : g.edges)
    recurrent = recurrent || (from == "lif1.w_rec" && to == "lif1.lif");
  EXPECT_TRUE(recurrent);
}

TEST(NIRReader, ContentNotExtensionDecides) {
  EXPECT_TRUE(isHDF5File(file("cnn_sinabs.nir")));
  std::string text = (std::filesystem::temp_directory_path() / "snn-nir-not.nir").string();
  std::ofstream(text) << "ir_version: 8\n";
  EXPECT_FALSE(isHDF5File(text));
  EXPECT_EQ(readNIRFile(text).error, text + ": not a NIR file (no HDF5 signature)");
  std::filesystem::remove(text);
  EXPECT_EQ(readNIRFile("/nonexistent/x.nir").error, "/nonexistent/x.nir: cannot open it");
}

TEST(NIRReader, TruncatedFileIsOneLine) {
  std::string cut = (std::filesystem::temp_directory_path() / "snn-nir-cut.nir").string();
  {
    std::ifstream in(file("cnn_sinabs.nir"), std::ios::binary);
    std::vector<char> head(4096);
    in.read(head.data(), std::streamsize(head.size()));
    std::ofstream(cut, std::ios::binary).write(head.data(), std::streamsize(head.size()));
  }
  EXPECT_EQ(readNIRFile(cut).error, cut + ": HDF5 cannot read it (truncated or damaged)");
  std::filesystem::remove(cut);
}

TEST(NIRReader, DamagedGraphsNameWhatIsWrong) {
  {
    ScratchFile f;
    f.string("version", "0.2.0");
    EXPECT_EQ(f.error(), f.path() + ": no NIR graph in it (no group 'node')");
  }
  {
    ScratchFile f;
    f.group("node");
    f.string("node/type", "Affine");
    EXPECT_EQ(f.error(), f.path() + ": its 'node' is not a NIRGraph (type 'Affine')");
  }
  {
    ScratchFile f;
    f.group("node");
    f.string("node/type", "NIRGraph");
    f.group("node/nodes");
    f.group("node/nodes/a");
    EXPECT_EQ(f.error(), f.path() + ": node 'a' has no string 'type'");
  }
  {
    ScratchFile f;
    f.group("node");
    f.string("node/type", "NIRGraph");
    f.group("node/nodes");
    f.group("node/nodes/a");
    f.string("node/nodes/a/type", "Input");
    f.edges("node/edges", {"a", "b"});
    EXPECT_EQ(f.error(), f.path() + ": edge 0 ('a' -> 'b') names no node 'b'");
  }
}
