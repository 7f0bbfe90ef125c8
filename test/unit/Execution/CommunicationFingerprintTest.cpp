//===- CommunicationFingerprintTest.cpp - The ranks' start-up agreement ---===//
//
// StaticShapes (what a collective communicates, without running the
// program), the fingerprint's text form, and findDisagreement on the cases
// the start-up check exists for: a collective missing on one rank, one of
// another size, a rank's own coordinate problem, a send without its recv.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include "snn/Runtime/Execution/CommunicationFingerprint.h"
#include "snn/Runtime/Execution/OnnxLoader.h"
#include "snn/Runtime/Execution/StaticShapes.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/ops/ones.h>
#include <gtest/gtest.h>

using namespace snn::runtime;
using snn::test::intAttr;
using snn::test::intsAttr;
using snn::test::ProgramBuilder;
using snn::test::stringAttr;

namespace {

/// conv2d (stride `stride`) -> max_pool2d -> flatten -> linear -> all_reduce over tp.
Graph convProgram(int64_t stride) {
  ProgramBuilder b;
  b.addInitializer("conv.weight", at::ones({4, 1, 3, 3}));
  b.addInitializer("fc.weight", at::ones({5, 4 * 7 * 7}));
  std::string v = b.addNode("conv2d", {"input", "conv.weight"},
                            {intsAttr("stride", {stride, stride}), intsAttr("padding", {1, 1})});
  v = b.addNode("max_pool2d", {v}, {intsAttr("kernel_size", {2, 2})});
  v = b.addNode("flatten", {v});
  v = b.addNode("linear", {v, "fc.weight"});
  b.addNode("all_reduce", {v}, {stringAttr("mesh_axis", "tp")}, "output");
  return parseOnnxProgram(b.serialize(), "program.onnx");
}

CommunicationStep allReduce(StaticShape shape, const std::string &node = "fc") {
  CommunicationStep step;
  step.op = "all_reduce";
  step.meshAxis = "tp";
  step.shapeKnown = true;
  step.shape = std::move(shape);
  step.node = node;
  step.file = "program.onnx";
  return step;
}

CommunicationFingerprint rankWith(int rank, std::vector<CommunicationStep> steps) {
  CommunicationFingerprint fingerprint;
  fingerprint.rank = rank;
  fingerprint.files = {"program_" + std::to_string(rank) + ".onnx"};
  fingerprint.stages = {-1};
  fingerprint.steps = std::move(steps);
  return fingerprint;
}

const snn::schema::MeshSpec kTp2{{"tp"}, {2}};

} // namespace

TEST(StaticShapes, FollowsConvPoolFlattenLinearWithTheBatchSymbolic) {
  Graph program = convProgram(1);
  auto shapes = inferStaticShapes(program, {4, kBatchSize, 1, 28, 28}, {{"tp", 2}});
  EXPECT_EQ(shapes.at(program.nodes[0].outputs[0]), (StaticShape{4, -1, 4, 28, 28}));
  EXPECT_EQ(shapes.at(program.nodes[1].outputs[0]), (StaticShape{4, -1, 4, 14, 14}));
  EXPECT_EQ(shapes.at(program.nodes[2].outputs[0]), (StaticShape{4, -1, 784}));
  // The rule takes linear's output size from the weight's rows; the kernel checks its columns.
  EXPECT_EQ(shapes.at("output"), (StaticShape{4, -1, 5}));
  EXPECT_EQ(formatStaticShape({4, kBatchSize, 5}), "[4, N, 5]");
}

TEST(StaticShapes, AStrideChangesWhatTheCollectiveSends) {
  Graph one = convProgram(1), two = convProgram(2);
  auto a = inferStaticShapes(one, {4, kBatchSize, 1, 28, 28}, {});
  auto b = inferStaticShapes(two, {4, kBatchSize, 1, 28, 28}, {});
  EXPECT_EQ(b.at(two.nodes[1].outputs[0]), (StaticShape{4, -1, 4, 7, 7}));
  EXPECT_NE(a.at(one.nodes[2].outputs[0]), b.at(two.nodes[2].outputs[0]));
}

TEST(StaticShapes, LeavesOutWhatItCannotTell) {
  ProgramBuilder b;
  std::string v = b.addNode("flatten", {"input"});
  b.addNode("all_reduce", {v}, {stringAttr("mesh_axis", "tp")}, "output");
  Graph program = parseOnnxProgram(b.serialize(), "p.onnx");
  // A batch dimension among the flattened ones: no product to give.
  auto shapes = inferStaticShapes(program, {4, 2, kBatchSize}, {});
  EXPECT_EQ(shapes.count(v), 0u);
  EXPECT_EQ(shapes.count("output"), 0u);
}

TEST(CommunicationFingerprint, TextRoundTrip) {
  CommunicationFingerprint mine = rankWith(1, {allReduce({4, kBatchSize, 8}, "a\tb")});
  mine.problem = "rank 1's program is another's";
  CommunicationFingerprint back = parseFingerprint(serializeFingerprint(mine));
  EXPECT_EQ(back.rank, 1);
  EXPECT_EQ(back.problem, mine.problem);
  EXPECT_EQ(back.files, mine.files);
  ASSERT_EQ(back.steps.size(), 1u);
  EXPECT_EQ(back.steps[0].shape, (StaticShape{4, kBatchSize, 8}));
  EXPECT_EQ(back.steps[0].node, "a b"); // a tab would split the field
  EXPECT_THROW(parseFingerprint("step\tall_reduce\n"), Error);
}

TEST(FindDisagreement, AgreeingRanks) {
  auto same = {allReduce({4, kBatchSize, 8})};
  EXPECT_EQ(findDisagreement({rankWith(0, same), rankWith(1, same)}, kTp2), "");
}

TEST(FindDisagreement, ACollectiveMissingOnOneRank) {
  std::string d = findDisagreement(
      {rankWith(0, {allReduce({4, -1, 8}, "fc1"), allReduce({4, -1, 2}, "fc2")}),
       rankWith(1, {allReduce({4, -1, 2}, "fc2")})},
      kTp2);
  EXPECT_NE(d.find("rank 0 and rank 1 differ in their collective over mesh axis 'tp' #1"),
            std::string::npos)
      << d;
  EXPECT_NE(d.find("[4, N, 8] (node 'fc1'"), std::string::npos) << d;
  d = findDisagreement({rankWith(0, {allReduce({4, -1, 2})}), rankWith(1, {})}, kTp2);
  EXPECT_NE(d.find("rank 1 has no collective over mesh axis 'tp' #1"), std::string::npos) << d;
}

TEST(FindDisagreement, ACollectiveOfAnotherSize) {
  std::string d = findDisagreement(
      {rankWith(0, {allReduce({4, -1, 16, 14, 14})}), rankWith(1, {allReduce({4, -1, 16, 7, 7})})},
      kTp2);
  EXPECT_NE(d.find("[4, N, 16, 14, 14]"), std::string::npos) << d;
  EXPECT_NE(d.find("[4, N, 16, 7, 7]"), std::string::npos) << d;
  // Unknown shapes do not count as different.
  CommunicationStep unknown = allReduce({});
  unknown.shapeKnown = false;
  EXPECT_EQ(findDisagreement({rankWith(0, {allReduce({4, -1, 8})}), rankWith(1, {unknown})},
                             kTp2),
            "");
}

TEST(FindDisagreement, ARanksOwnProblemComesFirst) {
  CommunicationFingerprint bad = rankWith(1, {});
  bad.problem = "rank 1's program program_1.onnx is the program of mesh coordinate tp=0";
  EXPECT_EQ(findDisagreement({rankWith(0, {allReduce({4, -1, 8})}), bad}, kTp2), bad.problem);
}

TEST(FindDisagreement, ASendWithoutItsRecv) {
  CommunicationStep send;
  send.op = "send";
  send.stage = 0, send.slot = 0, send.peer = 1;
  send.shapeKnown = true, send.shape = {4, -1, 8};
  send.node = "fc1", send.file = "program_0.onnx";
  CommunicationStep recv = send;
  recv.op = "recv", recv.stage = 1, recv.peer = 0, recv.file = "program_1.onnx";
  CommunicationFingerprint stage0 = rankWith(0, {send}), stage1 = rankWith(1, {recv});
  stage0.stages = {0}, stage1.stages = {1};
  snn::schema::MeshSpec pp{{"pp"}, {2}};
  EXPECT_EQ(findDisagreement({stage0, stage1}, pp), "");
  stage1.steps[0].shape = {4, -1, 9};
  EXPECT_NE(findDisagreement({stage0, stage1}, pp).find("but rank 1's stage 1 has recv of slot 0 "
                                                        "from stage 0 of [4, N, 9]"),
            std::string::npos);
  stage1.steps.clear();
  std::string d = findDisagreement({stage0, stage1}, pp);
  EXPECT_NE(d.find("rank 0's stage 0 has send of slot 0 to stage 1"), std::string::npos) << d;
  EXPECT_NE(d.find("matching recv"), std::string::npos) << d;
}

namespace {

ProgramNode neuron(const std::string &vReset, const std::string &file = "program_0.onnx") {
  return ProgramNode{-1, "lif3", "lif_node", "x -> s", {{"decay_input", "1"}, {"v_reset", vReset}},
                     file};
}

} // namespace

TEST(CommunicationFingerprint, NodesRoundTripWithEmptyValues) {
  CommunicationFingerprint mine = rankWith(0, {});
  mine.nodes = {neuron(""), neuron("0.5")};
  CommunicationFingerprint back = parseFingerprint(serializeFingerprint(mine));
  ASSERT_EQ(back.nodes.size(), 2u);
  EXPECT_EQ(back.nodes[0].attributes, mine.nodes[0].attributes);
  EXPECT_EQ(back.nodes[1].wiring, "x -> s");
  EXPECT_THROW(parseFingerprint("node\t0\tlif3\n"), Error);
}

TEST(FindDisagreement, ANodeEditedOnOneRank) {
  CommunicationFingerprint a = rankWith(0, {}), b = rankWith(1, {});
  a.nodes = {neuron("0")}, b.nodes = {neuron("0", "program_1.onnx")};
  EXPECT_EQ(findDisagreement({a, b}, kTp2), "");
  b.nodes[0].attributes[1].second = "0.5";
  std::string d = findDisagreement({a, b}, kTp2);
  EXPECT_NE(d.find("rank 0 and rank 1 differ in their node #1: rank 0's node 'lif3' (lif_node)"),
            std::string::npos)
      << d;
  EXPECT_NE(d.find("v_reset = 0, rank 1's of program_1.onnx has v_reset = 0.5"), std::string::npos)
      << d;
  b.nodes[0].attributes.pop_back();
  EXPECT_NE(findDisagreement({a, b}, kTp2).find("program_1.onnx has no v_reset"), std::string::npos);
  b.nodes[0] = neuron("0", "program_1.onnx"), b.nodes[0].wiring = "y -> s";
  EXPECT_NE(findDisagreement({a, b}, kTp2).find("computes x -> s, rank 1's of program_1.onnx y -> s"),
            std::string::npos);
  b.nodes.clear();
  EXPECT_NE(findDisagreement({a, b}, kTp2).find("rank 1's programs end before node #1"),
            std::string::npos);
  // The stages of a pipeline run different nodes.
  EXPECT_EQ(findDisagreement({a, b}, snn::schema::MeshSpec{{"pp"}, {2}}), "");
}
