//===- NIRWriterTest.cpp - NIR files written and read back; neurons matched back -===//

#include "snn/NIR/NIRGraph.h"
#include "snn/NIR/NIRNeurons.h"

#include <gtest/gtest.h>

#include <filesystem>

using namespace snn::nir;

namespace {

std::string scratch(const char *name) {
  return (std::filesystem::temp_directory_path() / name).string();
}

NirGraph sample() {
  NirGraph g;
  g.version = "0.2.0";
  g.nodes.push_back({"input", "Input", {{"shape", {{1}, {3}}}}, {}});
  g.nodes.push_back(
      {"fc",
       "Affine",
       {{"weight", {{2, 3}, {1.5, -2, 0.25, 0, 1e-3, 7}}}, {"bias", {{2}, {0.5, -1}}}},
       {}});
  g.nodes.push_back({"conv", "Conv2d", {{"stride", {{2}, {2, 1}}}, {"groups", {{}, {4}}}}, {}});
  g.nodes.push_back({"output", "Output", {{"shape", {{1}, {2}}}}, {}});
  g.edges = {{"input", "fc"}, {"fc", "output"}};
  return g;
}

TEST(NIRWriter, WhatItWritesReadsBack) {
  std::string path = scratch("snn-nir-writer-test.nir");
  ASSERT_EQ(writeNIRFile(sample(), path), "");
  NirReadResult r = readNIRFile(path);
  std::filesystem::remove(path);
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.graph.version, "0.2.0");
  EXPECT_EQ(r.graph.edges, sample().edges);
  ASSERT_EQ(r.graph.nodes.size(), 4u);
  const NirNode *fc = r.graph.node("fc");
  ASSERT_NE(fc, nullptr);
  EXPECT_EQ(fc->type, "Affine");
  EXPECT_EQ(fc->param("weight")->shape, (std::vector<int64_t>{2, 3}));
  // float32 in the file: 1e-3 comes back as the float nearest to it.
  EXPECT_EQ(fc->param("weight")->values, (std::vector<double>{1.5, -2, 0.25, 0, double(1e-3f), 7}));
  EXPECT_EQ(r.graph.node("conv")->param("stride")->values, (std::vector<double>{2, 1}));
  EXPECT_EQ(r.graph.node("conv")->param("groups")->shape, (std::vector<int64_t>{}));
}

TEST(NIRWriter, AFailedWriteLeavesNoFile) {
  std::string path = scratch("snn-nir-no-such-dir/m.nir");
  std::string error = writeNIRFile(sample(), path);
  EXPECT_EQ(error, path + ": cannot create it");
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
}

/// A neuron node of scalar parameters.
NirNode neuronNode(const std::string &type, std::map<std::string, double> params) {
  NirNode node;
  node.type = type;
  for (const auto &[key, value] : params)
    node.params[key] = NirArray{{}, {value}};
  return node;
}

TEST(NIRNeurons, EveryPrimitiveMatchesBackToItsParameters) {
  double dt = 1e-3;
  std::vector<NirNode> nodes = {
      neuronNode("IF", {{"r", 700}, {"v_threshold", 0.8}, {"v_reset", -0.1}}),
      neuronNode("I", {{"r", 50}}),
      neuronNode("LI", {{"tau", 5e-3}, {"r", 2}, {"v_leak", 0.1}}),
      neuronNode("LIF",
                 {{"tau", 3e-3}, {"r", 2}, {"v_leak", 0.2}, {"v_threshold", 1}, {"v_reset", -0.1}}),
      neuronNode("LIF",
                 {{"tau", 2e-3}, {"r", 1}, {"v_leak", 0}, {"v_threshold", 1}, {"v_reset", 0}}),
      neuronNode("CubaLI",
                 {{"tau_syn", 2e-3}, {"tau_mem", 4e-3}, {"r", 1.5}, {"v_leak", 0}, {"w_in", 1}}),
      neuronNode("CubaLIF", {{"tau_syn", 2e-4},
                             {"tau_mem", 1e-3},
                             {"r", 10},
                             {"v_leak", 0},
                             {"w_in", 2},
                             {"v_threshold", 1},
                             {"v_reset", 0}}),
      neuronNode("Threshold", {{"threshold", 0.3}}),
      neuronNode("Delay", {{"delay", 3e-3}}),
      neuronNode("Delay", {{"delay", 0.0}})};
  for (const NirNode &node : nodes) {
    NeuronPartsResult described = describeNeuronPrimitive(node, {4}, dt);
    ASSERT_EQ(described.error, "") << node.type;
    std::optional<NirNode> matched = matchNeuronPrimitive(described.parts, dt);
    ASSERT_TRUE(matched.has_value()) << node.type;
    EXPECT_EQ(matched->type, node.type);
    for (const auto &[key, array] : node.params) {
      const NirArray *back = matched->param(key);
      ASSERT_NE(back, nullptr) << node.type << " " << key;
      EXPECT_NEAR(back->values[0], array.values[0], 1e-12 * std::abs(array.values[0]))
          << node.type << " " << key;
    }
  }
}

TEST(NIRNeurons, AnotherStepIsNoPrimitive) {
  NeuronParts parts; // SpikingJelly's QIF: no NIR neuron steps this way
  parts.states = {"v=0"};
  parts.constants = {"tau=2", "v_c=0.8", "a0=1", "v_threshold=1", "v_reset=0"};
  parts.charge = {"h = v + (x + a0 * (v - 0) * (v - v_c)) / tau"};
  parts.fire = "h - v_threshold";
  parts.reset = "hard";
  EXPECT_FALSE(matchNeuronPrimitive(parts, 1.0).has_value());
}

} // namespace
