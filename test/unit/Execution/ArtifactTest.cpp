//===- ArtifactTest.cpp - manifest.json, program ONNX, artifact dirs ------===//

#include "TestSupport.h"

#include "snn/Runtime/Execution/Artifact.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Execution/Manifest.h"
#include "snn/Runtime/Execution/OnnxLoader.h"

#include <ATen/ops/ones.h>
#include <gtest/gtest.h>

#include <filesystem>

using namespace snn::runtime;
using nlohmann::json;
using snn::test::makeManifest;
using snn::test::ProgramBuilder;
using snn::test::TempDir;

namespace {

ProgramBuilder tinyProgram() {
  ProgramBuilder b;
  b.addInitializer("fc.weight", at::ones({2, 3}));
  std::string v = b.addNode("linear", {"input", "fc.weight"});
  b.addNode("if_node", {v}, {snn::test::floatAttr("v_threshold", 1.0f)},
            "output");
  return b;
}

json tinyManifest() {
  json manifest = makeManifest({4, -1, 3}, {4, -1, 2}, true);
  manifest["parameters"] = {{{"name", "fc.weight"},
                             {"shape", {2, 3}},
                             {"kind", "parameter"},
                             {"sharding", "replicated"}}};
  return manifest;
}

/// The error that loading `dir` throws, or "".
std::string loadError(const std::string &dir) {
  try {
    loadArtifact(dir);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

std::string manifestError(const json &manifest) {
  try {
    parseManifest(manifest.dump(), "m.json");
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

std::string onnxError(const std::string &bytes) {
  try {
    parseOnnxProgram(bytes, "p.onnx");
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(Manifest, ParsesTheDocumentedExample) {
  Manifest manifest = parseManifest(tinyManifest().dump(), "m.json");
  EXPECT_EQ(manifest.version, 1);
  EXPECT_EQ(manifest.worldSize, 1);
  ASSERT_EQ(manifest.programs.size(), 1u);
  EXPECT_EQ(manifest.programForRank(0).file, "program_0.onnx");
  EXPECT_EQ(manifest.input.shape, (std::vector<int64_t>{4, -1, 3}));
  EXPECT_TRUE(manifest.input.timeMajor);
  EXPECT_EQ(manifest.parameters.at(0).kind, ParameterKind::Parameter);
  EXPECT_EQ(manifest.plan.mode, snn::schema::ParallelMode::None);
}

TEST(Manifest, RejectsBadManifests) {
  EXPECT_NE(manifestError(json::array()).find("top level must be a JSON object"),
            std::string::npos);
  json m = tinyManifest();
  m["format"] = "other";
  EXPECT_NE(manifestError(m).find("unknown format 'other'"), std::string::npos);
  m = tinyManifest();
  m["version"] = 3;
  EXPECT_EQ(manifestError(m), "m.json: artifact format 3, this snn-run reads 1 to 2 (use the "
                              "snn-run built with the snn-compile that wrote it)");
  m = tinyManifest();
  m.erase("input");
  EXPECT_EQ(manifestError(m), "m.json: missing 'input'");
  m = tinyManifest();
  m["input"]["shape"] = {4, "N"};
  EXPECT_NE(manifestError(m).find("'input.shape' must be an array of integers"),
            std::string::npos);
  m = tinyManifest();
  m["programs"][0]["ranks"] = {0, 1};
  EXPECT_NE(manifestError(m).find("rank 1 is out of range"), std::string::npos);
  m = tinyManifest();
  m["programs"][0]["file"] = "../escape.onnx";
  EXPECT_NE(manifestError(m).find("must be a path inside"), std::string::npos);
  m = tinyManifest();
  m["parameters"][0]["kind"] = "weight";
  EXPECT_NE(manifestError(m).find("parameters[0].kind"), std::string::npos);
  try {
    parseManifest("{not json", "m.json");
    FAIL();
  } catch (const Error &e) {
    EXPECT_EQ(std::string(e.what()).rfind("m.json: invalid JSON", 0), 0u);
  }
}

TEST(OnnxLoader, ReadsInitializersAndAttributes) {
  Graph graph = parseOnnxProgram(tinyProgram().serialize(), "p.onnx");
  EXPECT_EQ(graph.inputs, std::vector<std::string>{"input"});
  EXPECT_EQ(graph.outputs, std::vector<std::string>{"output"});
  ASSERT_EQ(graph.nodes.size(), 2u);
  EXPECT_EQ(graph.nodes[1].attributes.at("v_threshold").f, 1.0f);
  EXPECT_TRUE(graph.initializers.at("fc.weight").equal(at::ones({2, 3})));
}

TEST(OnnxLoader, RejectsEveryTruncation) {
  std::string bytes = tinyProgram().serialize();
  for (size_t length = 0; length < bytes.size(); ++length)
    ASSERT_NE(onnxError(bytes.substr(0, length)), "")
        << "prefix of " << length << " bytes was accepted";
  EXPECT_NE(onnxError("").find("no graph"), std::string::npos);
  EXPECT_NE(onnxError(std::string("\xff\xff\xff\xff garbage", 12))
                .find("not a valid ONNX model"),
            std::string::npos);
}

TEST(OnnxLoader, RejectsForeignOrMalformedPrograms) {
  ProgramBuilder noOpset = tinyProgram();
  noOpset.model().clear_opset_import();
  EXPECT_NE(onnxError(noOpset.serialize()).find("no opset import"),
            std::string::npos);

  ProgramBuilder foreign = tinyProgram();
  foreign.model().mutable_graph()->mutable_node(0)->set_domain("");
  EXPECT_NE(onnxError(foreign.serialize())
                .find("node 'layer0' (linear) is in domain ''"),
            std::string::npos);

  ProgramBuilder shortData = tinyProgram();
  shortData.model().mutable_graph()->mutable_initializer(0)->mutable_raw_data()->resize(8);
  EXPECT_NE(onnxError(shortData.serialize())
                .find("initializer 'fc.weight' has 8 bytes of raw_data"),
            std::string::npos);

  ProgramBuilder doubles = tinyProgram();
  doubles.model().mutable_graph()->mutable_initializer(0)->set_data_type(
      onnx::TensorProto::DOUBLE);
  EXPECT_NE(onnxError(doubles.serialize()).find("is not float32"),
            std::string::npos);
}

TEST(Artifact, LoadsADirectory) {
  TempDir dir;
  writeArtifact(dir.path(), tinyProgram(), tinyManifest());
  Artifact artifact = loadArtifact(dir.path());
  EXPECT_EQ(artifact.program.nodes.size(), 2u);
  EXPECT_EQ(artifact.program.file, dir.file("program_0.onnx"));
}

TEST(Artifact, ReportsMissingPieces) {
  TempDir dir;
  EXPECT_EQ(loadError(dir.file("nope")),
            "artifact directory '" + dir.file("nope") + "' does not exist");
  EXPECT_NE(loadError(dir.path()).find("has no manifest.json"),
            std::string::npos);
  snn::test::writeFile(dir.file("manifest.json"), tinyManifest().dump());
  EXPECT_EQ(loadError(dir.path()).rfind(dir.file("program_0.onnx") +
                                         ": cannot open",
                                     0),
            0u);
}

TEST(Artifact, ReadsOnlyFromItsOwnDirectory) {
  namespace fs = std::filesystem;
  TempDir outside, dir;
  writeArtifact(outside.path(), tinyProgram(), tinyManifest());
  writeArtifact(dir.path(), tinyProgram(), tinyManifest());
  // A link inside the directory is followed.
  fs::rename(dir.file("program_0.onnx"), dir.file("real.onnx"));
  fs::create_symlink("real.onnx", dir.file("program_0.onnx"));
  EXPECT_EQ(loadError(dir.path()), "");
  // A link out of it (to a file, to a device, through a folder) is not.
  fs::remove(dir.file("program_0.onnx"));
  fs::create_symlink(outside.file("program_0.onnx"), dir.file("program_0.onnx"));
  EXPECT_NE(loadError(dir.path()).find("program_0.onnx: resolves to '"), std::string::npos);
  fs::remove(dir.file("program_0.onnx"));
  fs::create_symlink("/dev/zero", dir.file("program_0.onnx"));
  EXPECT_NE(loadError(dir.path()).find("outside '"), std::string::npos);
  fs::remove(dir.file("program_0.onnx"));
  json manifest = tinyManifest();
  manifest["programs"][0]["file"] = "sub/program_0.onnx";
  writeArtifact(dir.path(), tinyProgram(), manifest);
  fs::create_symlink(outside.path(), dir.file("sub"));
  EXPECT_NE(loadError(dir.path()).find("sub/program_0.onnx: resolves to"), std::string::npos);
  fs::remove(dir.file("manifest.json"));
  fs::create_symlink(outside.file("manifest.json"), dir.file("manifest.json"));
  EXPECT_NE(loadError(dir.path()).find("manifest.json: resolves to"), std::string::npos);
}

TEST(Artifact, RejectsTruncatedProgramFile) {
  TempDir dir;
  writeArtifact(dir.path(), tinyProgram(), tinyManifest());
  std::string bytes = tinyProgram().serialize();
  snn::test::writeFile(dir.file("program_0.onnx"),
                       bytes.substr(0, bytes.size() / 2));
  EXPECT_EQ(loadError(dir.path()).rfind(dir.file("program_0.onnx") + ": ", 0),
            0u);
}

TEST(Artifact, ChecksManifestAgainstProgram) {
  TempDir dir;
  json manifest = tinyManifest();
  manifest["input"]["name"] = "x";
  writeArtifact(dir.path(), tinyProgram(), manifest);
  EXPECT_NE(loadError(dir.path()).find("graph has no input 'x'"),
            std::string::npos);

  manifest = tinyManifest();
  manifest["parameters"][0]["shape"] = {3, 2};
  writeArtifact(dir.path(), tinyProgram(), manifest);
  EXPECT_NE(loadError(dir.path())
                .find("initializer 'fc.weight' has shape [2, 3], "
                      "manifest.json says [3, 2]"),
            std::string::npos);
}

namespace {

/// A partitioned (tp) manifest for two ranks whose fc.weight [4, 3] is split
/// along dim 0; written with program_0.onnx for rank 0 and `program` for
/// rank 1.
void writeTensorParallelArtifact(const std::string &dir,
                                 const ProgramBuilder &program) {
  json manifest = makeManifest({4, -1, 3}, {4, -1, 2}, true);
  manifest["version"] = 2;
  manifest["world_size"] = 2;
  manifest["mesh"] = {{"axes", {"tp"}}, {"shape", {2}}};
  manifest["programs"] = {{{"file", "program_0.onnx"}, {"ranks", {0}}},
                          {{"file", "program_1.onnx"}, {"ranks", {1}}}};
  manifest["parameters"] = {{{"name", "fc.weight"},
                             {"shape", {4, 3}},
                             {"kind", "parameter"},
                             {"sharding", "split"},
                             {"split_dim", 0},
                             {"mesh_axis", "tp"}}};
  manifest["plan"] = {{"mode", "tp"}, {"partitioned", true}};
  snn::test::writeArtifact(dir, tinyProgram(), manifest);
  snn::test::writeFile((std::filesystem::path(dir) / "program_1.onnx").string(),
                       program.serialize());
}

std::string loadErrorForRank(const std::string &dir, int rank) {
  try {
    loadArtifact(dir, rank);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(Artifact, SplitParameterHoldsOnePartPerProgram) {
  TempDir dir;
  // tinyProgram's fc.weight is [2, 3]: the part of [4, 3] over 2 members.
  writeTensorParallelArtifact(dir.path(), tinyProgram());
  EXPECT_EQ(loadErrorForRank(dir.path(), 1), "");
  ProgramBuilder whole;
  whole.addInitializer("fc.weight", at::ones({4, 3}));
  std::string v = whole.addNode("linear", {"input", "fc.weight"});
  whole.addNode("if_node", {v}, {}, "output");
  writeTensorParallelArtifact(dir.path(), whole);
  EXPECT_EQ(loadErrorForRank(dir.path(), 0), "");
  std::string message = loadErrorForRank(dir.path(), 1);
  EXPECT_NE(message.find("program_1.onnx: initializer 'fc.weight' has shape "
                         "[4, 3], but manifest.json splits its shape [4, 3] along "
                         "dimension 0 over the 2 members of mesh axis 'tp', so "
                         "each program holds [2, 3]"),
            std::string::npos)
      << message;
}

TEST(Artifact, CollectiveOverAnAxisTheMeshLacksIsRefused) {
  TempDir dir;
  ProgramBuilder program;
  program.addInitializer("fc.weight", at::ones({2, 3}));
  std::string v = program.addNode("linear", {"input", "fc.weight"});
  v = program.addNode("all_reduce", {v}, {snn::test::stringAttr("mesh_axis", "pp")});
  program.addNode("if_node", {v}, {}, "output");
  writeTensorParallelArtifact(dir.path(), program);
  std::string message = loadErrorForRank(dir.path(), 1);
  EXPECT_NE(message.find("program_1.onnx: node 'layer1' (all_reduce): mesh axis "
                         "'pp' is not an axis of the artifact's mesh (axes: tp)"),
            std::string::npos)
      << message;
}
