// Megatron pairing, divisibility and TP communication, hand-counted.
#include "snn/Planner/TensorParallel.h"

#include "TestModels.h"

#include <gtest/gtest.h>

using namespace snn::planner;
using snn::planner::test::ModelBuilder;

TEST(TensorParallel, PairsLinearNeuronLinear) {
  ModelInfo mlp = test::spikingMlp(16, 8, 4);
  TPLayout layout = planTensorParallel(mlp);
  ASSERT_EQ(layout.pairs.size(), 1u);
  EXPECT_EQ(layout.pairs[0].colwise, 1);
  EXPECT_EQ(layout.pairs[0].rowwise, 3);
  EXPECT_EQ(layout.roles[0], TPRole::Replicated); // flatten
  EXPECT_EQ(layout.roles[1], TPRole::Colwise);
  EXPECT_EQ(layout.roles[2], TPRole::Sharded);    // the LIF's state follows its input
  EXPECT_EQ(layout.roles[3], TPRole::Rowwise);
  EXPECT_EQ(layout.roles[4], TPRole::Replicated);
  EXPECT_EQ(layout.splitDims[1], 2);
  EXPECT_EQ(layout.splitDims[2], 2);
  EXPECT_TRUE(layout.notes.empty());
}

TEST(TensorParallel, ARecurrentNeuronIsNeverSplitOnItsFeatures) {
  // Its fed-back product mixes every feature: a pair cannot cross it.
  ModelBuilder b({2, -1, 8}, 2);
  int x = b.linear(-1, 8, false, "a");
  x = b.neuron(x, OpKind::RecurrentNeuron, "rec");
  x = b.linear(x, 4, false, "b");
  x = b.neuron(x, OpKind::IFNode, "out");
  ModelInfo model = b.build(x);
  TPLayout layout = planTensorParallel(model);
  for (const TPPair &pair : layout.pairs)
    EXPECT_NE(pair.rowwise, 2) << "a pair across the recurrent neuron";
  EXPECT_NE(layout.roles[1], TPRole::Sharded);
}

TEST(TensorParallel, ThirdLinearIsGatheredNotFedASlice) {
  ModelBuilder b({2, -1, 8}, 2);
  int x = b.linear(-1, 8, false, "a");
  x = b.neuron(x, OpKind::IFNode, "sa");
  x = b.linear(x, 8, false, "b");
  x = b.neuron(x, OpKind::IFNode, "sb");
  x = b.linear(x, 4, false, "c");
  x = b.neuron(x, OpKind::IFNode, "sc");
  ModelInfo model = b.build(x);
  TPLayout layout = planTensorParallel(model);
  ASSERT_EQ(layout.pairs.size(), 2u);
  EXPECT_EQ(layout.pairs[1].colwise, 4);
  EXPECT_EQ(layout.pairs[1].rowwise, -1);
  EXPECT_EQ(layout.pairs[1].gatherAfter, 5);
  ASSERT_EQ(layout.notes.size(), 1u);
  EXPECT_NE(layout.notes[0].find("'c' has no rowwise partner"), std::string::npos);
}

TEST(TensorParallel, ConvPairKeepsBatchNormAndPoolSplit) {
  ModelInfo model = test::csnn(8, 4, /*convCandidates=*/true);
  TPLayout layout = planTensorParallel(model);
  ASSERT_EQ(layout.pairs.size(), 2u);
  EXPECT_EQ(layout.pairs[0].colwise, 0);
  EXPECT_EQ(layout.pairs[0].rowwise, 4);
  EXPECT_EQ(layout.roles[1], TPRole::Sharded); // batch_norm
  EXPECT_EQ(layout.roles[3], TPRole::Sharded); // max_pool2d
  EXPECT_EQ(layout.splitDims[1], 2);           // channels
  EXPECT_EQ(layout.roles[5], TPRole::Replicated);
  EXPECT_EQ(layout.pairs[1].colwise, 9);
  EXPECT_EQ(layout.pairs[1].rowwise, 11);
}

/// qkv conv - batch_norm - LIF - attention - LIF - proj conv - LIF, the Spikformer's
/// attention over a 2x2 token grid (the model's convs 1x1 candidates).
ModelInfo attentionBlock(int64_t channels, int64_t heads) {
  ModelBuilder b({4, -1, channels, 2, 2}, 4);
  int x = b.conv(-1, 3 * channels, 1, 0, "attn.qkv.0", true);
  x = b.batchNorm(x, "attn.qkv.1");
  x = b.neuron(x, OpKind::LIFNode, "attn.qkv_lif");
  x = b.spikingAttention(x, heads, "attn/attention");
  x = b.neuron(x, OpKind::LIFNode, "attn.attn_lif");
  x = b.conv(x, channels, 1, 0, "attn.proj.0", true);
  x = b.neuron(x, OpKind::LIFNode, "attn.proj_lif");
  return b.build(x);
}

TEST(TensorParallel, AttentionSplitsByHeadsBetweenItsProjections) {
  ModelInfo model = attentionBlock(8, 4);
  TPLayout layout = planTensorParallel(model);
  ASSERT_EQ(layout.pairs.size(), 1u);
  EXPECT_EQ(layout.pairs[0].colwise, 0);  // the fused qkv projection
  EXPECT_EQ(layout.pairs[0].rowwise, 5);  // the output projection
  EXPECT_EQ(layout.roles[3], TPRole::Sharded);
  EXPECT_EQ(layout.splitDims[3], 2);
  EXPECT_TRUE(checkTensorParallelDivisible(model, layout, 4).ok());
  Status three = checkTensorParallelDivisible(attentionBlock(12, 4),
                                              planTensorParallel(attentionBlock(12, 4)), 3);
  ASSERT_FALSE(three.ok());
  EXPECT_EQ(three.error().message,
            "cannot split 'attn/attention' (spiking_attention) over tp=3: its 4 heads are not "
            "divisible by 3 (each rank computes whole heads)");
}

TEST(TensorParallel, AModelOutputLayerStaysWhole) {
  ModelBuilder b({2, -1, 8}, 2);
  int x = b.linear(-1, 8, false, "a");
  x = b.neuron(x, OpKind::IFNode, "sa");
  x = b.linear(x, 4, false, "head");
  TPLayout layout = planTensorParallel(b.build(x));
  EXPECT_EQ(layout.roles[0], TPRole::Colwise);
  EXPECT_EQ(layout.roles[2], TPRole::Rowwise);  // paired: its sum is whole
  ModelBuilder c({2, -1, 8}, 2);
  int y = c.neuron(-1, OpKind::IFNode, "s");
  y = c.linear(y, 4, false, "head");
  TPLayout alone = planTensorParallel(c.build(y));
  EXPECT_EQ(alone.roles[1], TPRole::Replicated);
  ASSERT_EQ(alone.notes.size(), 1u);
  EXPECT_EQ(alone.notes[0], "'head' computes the model's output: it stays whole");
}

TEST(TensorParallel, DivisibilityNamesTheOp) {
  ModelInfo mlp = test::spikingMlp(16, 10, 4);
  EXPECT_TRUE(checkTensorParallelDivisible(mlp, planTensorParallel(mlp), 2).ok());
  Status s = checkTensorParallelDivisible(mlp, planTensorParallel(mlp), 4);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().opIndex, 1);
  EXPECT_EQ(s.error().message,
            "cannot split '1' (linear) over tp=4: its 10 output features are not divisible by 4");
}

TEST(TensorParallel, ShareAndCommunication) {
  // Flatten - fc1(16 -> 8, bias) - LIF - fc2(8 -> 4, bias) - LIF, T = 4, tp = 2.
  ModelInfo mlp = test::spikingMlp(16, 8, 4);
  TPLayout layout = planTensorParallel(mlp);
  TPShare share = tensorParallelShare(mlp, layout, 2);
  EXPECT_DOUBLE_EQ(share.computeScale[1], 0.5);
  EXPECT_DOUBLE_EQ(share.activationScale[2], 0.5);
  EXPECT_DOUBLE_EQ(share.activationScale[3], 1.0); // whole after the all-reduce
  EXPECT_DOUBLE_EQ(share.paramScale[1], 0.5);
  // fc2: weight 32 split, bias 4 whole: (16 + 4) / 36.
  EXPECT_DOUBLE_EQ(share.paramScale[3], 20.0 / 36.0);
  // batch 8: backward all-reduce of fc1's input [4, 8, 16] and forward all-reduce of fc2's
  // output [4, 8, 4], each 2 * (1/2) * bytes.
  Communication comm = tensorParallelCommunication(mlp, layout, 2, 8);
  EXPECT_EQ(comm.bytes, 4 * 8 * 16 * 4 + 4 * 8 * 4 * 4);
  EXPECT_EQ(comm.collectives, 2);
}

TEST(TensorParallel, ColwiseOnTheModelInputNeedsNoBackwardAllReduce) {
  ModelBuilder b({2, -1, 8}, 2);
  int x = b.linear(-1, 8, false, "a");
  x = b.neuron(x, OpKind::PLIFNode, "sa");
  ModelInfo model = b.build(x);
  TPLayout layout = planTensorParallel(model);
  Communication comm = tensorParallelCommunication(model, layout, 2, 1);
  // The all-gather of the PLIF output (2*1*8 floats, half each; its backward slices the
  // replicated gradient, no collective) and the all-reduce of the PLIF's w gradient (4
  // bytes).
  EXPECT_EQ(comm.bytes, 32 + 4);
  EXPECT_EQ(comm.collectives, 2);
}
