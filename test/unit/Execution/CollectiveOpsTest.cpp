//===- CollectiveOpsTest.cpp - bias_add and collectives in one process ----===//
//
// The kernels of a partitioned program's ops as the executor runs them in one
// process: bias_add's values, and the collectives over a mesh axis of size 1
// (the identity, forward and backward, counting nothing) or without a mesh
// or over an axis the mesh lacks (an error naming the node). The collectives
// on real ranks are checked by snn-dist-check (test/distributed).
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include "snn/Runtime/Execution/Executor.h"
#include "snn/Runtime/Execution/MeshContext.h"
#include "snn/Runtime/Execution/OnnxLoader.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

using namespace snn::runtime;
using snn::test::errorOf;
using snn::test::intAttr;
using snn::test::ProgramBuilder;
using snn::test::stringAttr;

namespace {

Graph graphOf(const ProgramBuilder &builder) {
  return parseOnnxProgram(builder.serialize(), "test.onnx");
}

/// input -> OP over mesh axis `axis` -> output.
ProgramBuilder collectiveProgram(const std::string &opType,
                                 const std::string &meshAxis) {
  ProgramBuilder b;
  std::vector<onnx::AttributeProto> attributes{stringAttr("mesh_axis", meshAxis)};
  if (opType == "all_gather" || opType == "all_slice")
    attributes.push_back(intAttr("axis", 2));
  b.addNode(opType, {"input"}, attributes, "output");
  return b;
}

MeshContext oneProcessMesh(std::vector<std::string> axes) {
  snn::schema::MeshSpec spec;
  spec.shape.assign(axes.size(), 1);
  spec.axes = std::move(axes);
  return MeshContext::create(nullptr, spec);
}

const char *kCollectives[] = {"all_reduce", "backward_all_reduce", "all_gather",
                              "all_slice"};

} // namespace

TEST(CollectiveOps, BiasAddBroadcastsAlongTheAxis) {
  ProgramBuilder b;
  b.addInitializer("b", at::tensor({1.0f, 2.0f, 3.0f}));
  b.addNode("bias_add", {"input", "b"}, {intAttr("axis", 1)}, "output");
  at::Tensor x = at::arange(12, at::kFloat).view({2, 3, 2});
  at::Tensor y = Executor(graphOf(b), "input", "output").run(x);
  EXPECT_TRUE(at::equal(y, x + at::tensor({1.0f, 2.0f, 3.0f}).view({1, 3, 1})));
}

TEST(CollectiveOps, BiasAddRefusesABiasOfAnotherSize) {
  ProgramBuilder b;
  b.addInitializer("b", at::ones({4}));
  b.addNode("bias_add", {"input", "b"}, {intAttr("axis", 2)}, "output");
  Executor executor(graphOf(b), "input", "output");
  std::string message = errorOf([&] { executor.run(at::ones({2, 3, 5})); });
  EXPECT_NE(message.find("node 'layer0' (bias_add)"), std::string::npos) << message;
  EXPECT_NE(message.find("bias has shape [4], expected [5]"), std::string::npos)
      << message;
  message = errorOf([&] { executor.run(at::ones({2, 3})); });
  EXPECT_NE(message.find("axis 2 is not a dimension of the input [2, 3]"),
            std::string::npos)
      << message;
}

TEST(CollectiveOps, AxisOfSizeOneIsTheIdentityAndCountsNothing) {
  MeshContext mesh = oneProcessMesh({"dp", "tp"});
  for (const char *opType : kCollectives) {
    Executor executor(graphOf(collectiveProgram(opType, "tp")), "input",
                      "output");
    at::Tensor x = at::randn({2, 3, 4}).set_requires_grad(true);
    at::Tensor y = executor.run(x, true, nullptr, nullptr, &mesh);
    EXPECT_TRUE(at::equal(y, x)) << opType;
    (y * 3).sum().backward();
    EXPECT_TRUE(at::equal(x.grad(), at::full({2, 3, 4}, 3.0f))) << opType;
    EXPECT_TRUE(mesh.stats().counts().empty()) << opType;
  }
}

TEST(CollectiveOps, NoMeshOrAnUnknownAxisIsAnErrorNamingTheNode) {
  MeshContext mesh = oneProcessMesh({"tp"});
  for (const char *opType : kCollectives) {
    std::string node = std::string("node 'layer0' (") + opType + ")";
    Executor executor(graphOf(collectiveProgram(opType, "pp")), "input",
                      "output");
    std::string message = errorOf([&] { executor.run(at::ones({2, 3, 4})); });
    EXPECT_NE(message.find(node), std::string::npos) << message;
    EXPECT_NE(message.find("no device mesh"), std::string::npos) << message;
    message = errorOf(
        [&] { executor.run(at::ones({2, 3, 4}), false, nullptr, nullptr, &mesh); });
    EXPECT_NE(message.find(node), std::string::npos) << message;
    EXPECT_NE(message.find("mesh axis 'pp' is not an axis of the artifact's "
                           "mesh (axes: tp)"),
              std::string::npos)
        << message;
  }
}

TEST(CollectiveOps, MissingMeshAxisAttributeFailsTheBuild) {
  ProgramBuilder b;
  b.addNode("all_reduce", {"input"}, {}, "output");
  std::string message =
      errorOf([&] { Executor(graphOf(b), "input", "output"); });
  EXPECT_NE(message.find("node 'layer0' (all_reduce): missing attribute 'mesh_axis'"),
            std::string::npos)
      << message;
}

TEST(CollectiveOps, OneProcessMeshNeedsAxesOfSizeOne) {
  snn::schema::MeshSpec spec;
  spec.axes = {"tp"};
  spec.shape = {2};
  std::string message = errorOf([&] { MeshContext::create(nullptr, spec); });
  EXPECT_NE(message.find("mesh axis 'tp' has 2 members"), std::string::npos)
      << message;
}

TEST(CollectiveOps, CommStatsCountPerKindAndAxisInOrder) {
  CommStats stats;
  stats.record("all_reduce", "tp", 100);
  stats.record("all_gather", "tp", 8);
  stats.record("all_reduce", "tp", 28);
  stats.record("all_reduce", "dp", 4);
  std::vector<CommCount> counts = stats.counts();
  ASSERT_EQ(counts.size(), 3u);
  EXPECT_EQ(counts[0].kind, "all_gather");
  EXPECT_EQ(counts[0].calls, 1);
  EXPECT_EQ(counts[1].meshAxis, "dp");
  EXPECT_EQ(counts[2].meshAxis, "tp");
  EXPECT_EQ(counts[2].calls, 2);
  EXPECT_EQ(counts[2].bytes, 128);
  stats.reset();
  EXPECT_TRUE(stats.counts().empty());
}
