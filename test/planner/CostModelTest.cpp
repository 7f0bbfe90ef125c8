// Cost model against hand-counted FLOPs and bytes (conventions in CostModel.h).
#include "snn/Planner/Calibration.h"
#include "snn/Planner/Communication.h"
#include "snn/Planner/CostModel.h"
#include "snn/Schema/TrainingCommunication.h"

#include "TestModels.h"

#include <gtest/gtest.h>

using namespace snn::planner;
using snn::planner::test::ModelBuilder;

TEST(CostModel, LinearWithBias) {
  // x [T=4, N, 16] -> y [4, N, 32]; at N = 8 there are 4*8 = 32 rows of 32 outputs.
  ModelBuilder b({4, -1, 16}, 4);
  int fc = b.linear(-1, 32, /*bias=*/true, "fc");
  ModelInfo model = b.build(fc);
  OpCost cost = opCost(model, fc, 8);
  EXPECT_DOUBLE_EQ(cost.forwardFlops, 32.0 * 32 * (2 * 16 + 1)); // 33792
  EXPECT_DOUBLE_EQ(cost.backwardFlops, 2 * 33792.0);
  EXPECT_EQ(cost.paramBytes, (32 * 16 + 32) * 4);  // 2176
  EXPECT_EQ(cost.outputBytes, 4 * 8 * 32 * 4);     // 4096
  EXPECT_EQ(cost.inputBytes, 4 * 8 * 16 * 4);     // 2048
  EXPECT_EQ(cost.activationBytes, cost.inputBytes); // its input, for the weight gradient
  EXPECT_EQ(cost.bufferBytes, 0);
}

TEST(CostModel, ConvWithoutBias) {
  // x [T=2, N, 4, 8, 8], 6 filters 3x3, padding 1 -> [2, N, 6, 8, 8]; at N = 3:
  // 2*3*6*8*8 = 2304 outputs, each 2 * 4 * 3 * 3 = 72 FLOPs.
  ModelBuilder b({2, -1, 4, 8, 8}, 2);
  int conv = b.conv(-1, 6, 3, 1, "conv");
  ModelInfo model = b.build(conv);
  OpCost cost = opCost(model, conv, 3);
  EXPECT_DOUBLE_EQ(cost.forwardFlops, 2304.0 * 72); // 165888
  EXPECT_DOUBLE_EQ(cost.backwardFlops, 2 * 165888.0);
  EXPECT_EQ(cost.paramBytes, 6 * 4 * 3 * 3 * 4); // 864
  EXPECT_EQ(cost.outputBytes, 2304 * 4);
  // Its float input (the model's, not spikes): 2 * 3 * 4 * 8 * 8 = 1536 values.
  EXPECT_EQ(cost.activationBytes, 1536 * 4);
}

TEST(CostModel, LIFNeuron) {
  // [T=4, N, 10] at N = 2: 80 elements x 7 FLOPs; keeps H (the backward recomputes the
  // spikes from it): 320 bytes.
  ModelBuilder b({4, -1, 10}, 4);
  int lif = b.neuron(-1, OpKind::LIFNode, "sn");
  ModelInfo model = b.build(lif);
  OpCost cost = opCost(model, lif, 2);
  EXPECT_DOUBLE_EQ(cost.forwardFlops, 80.0 * 7);
  EXPECT_DOUBLE_EQ(cost.backwardFlops, 2 * 560.0);
  EXPECT_EQ(cost.paramBytes, 0);
  EXPECT_EQ(cost.outputBytes, 320);
  EXPECT_EQ(cost.activationBytes, 320);
  EXPECT_EQ(cost.fusedActivationBytes, 320); // no BatchNorm before it: no block
}

TEST(CostModel, OtherKinds) {
  ModelBuilder b({2, -1, 3, 4, 4}, 2);
  int bn = b.batchNorm(-1, "bn");
  int sn = b.neuron(bn, OpKind::IFNode, "sn");
  int pool = b.maxPool(sn, 2, "pool");
  int flat = b.flatten(pool, "flat");
  int mean = b.meanTime(flat, "mean");
  ModelInfo model = b.build(mean);
  // batch 1: bn/sn over 2*3*4*4 = 96 elements, pool 2*3*2*2 = 24 outputs.
  EXPECT_DOUBLE_EQ(opCost(model, bn, 1).forwardFlops, 96.0 * 6);
  EXPECT_EQ(opCost(model, bn, 1).paramBytes, 6 * 4);
  EXPECT_EQ(opCost(model, bn, 1).bufferBytes, 6 * 4);
  EXPECT_DOUBLE_EQ(opCost(model, sn, 1).forwardFlops, 96.0 * 4);
  EXPECT_DOUBLE_EQ(opCost(model, pool, 1).forwardFlops, 24.0 * 4);
  EXPECT_DOUBLE_EQ(opCost(model, flat, 1).forwardFlops, 0.0);
  EXPECT_EQ(opCost(model, flat, 1).activationBytes, 0); // a view
  // mean_time: 12 outputs, T = 2 FLOPs each.
  EXPECT_DOUBLE_EQ(opCost(model, mean, 1).forwardFlops, 12.0 * 2);
  EXPECT_EQ(opCost(model, mean, 5).outputBytes, 5 * 12 * 4);
}

TEST(CostModel, WhatPoolsViewsAndAttentionKeep) {
  // [T=2, N, 12, 4, 4] spikes; at batch 1 the neuron's output is 2*12*4*4 = 384 values.
  ModelBuilder b({2, -1, 12, 4, 4}, 2);
  int sn = b.neuron(-1, OpKind::IFNode, "sn");
  int avg = b.avgPool(sn, 2, "avg");
  EXPECT_EQ(opCost(b.build(avg), avg, 1).activationBytes, 384 * 4); // ATen's backward reads it
  // An adaptive average pool keeps its input too, but to 1 x 1 (a mean) only shapes.
  ModelBuilder adaptive({2, -1, 12, 4, 4}, 2);
  int spikes = adaptive.neuron(-1, OpKind::IFNode, "sn");
  int half = adaptive.avgPool(spikes, 2, "half"), global = adaptive.avgPool(spikes, 4, "gap");
  ModelInfo pooled = adaptive.build(global);
  for (int op : {half, global})
    pooled.ops[size_t(op)].kind = OpKind::AdaptiveAvgPool2d;
  EXPECT_EQ(opCost(pooled, half, 1).activationBytes, 384 * 4);
  EXPECT_EQ(opCost(pooled, global, 1).activationBytes, 0);
  // A view to [T, N, 12, 16] keeps nothing, and a conv after it still keeps spikes as bits.
  int view = b.reshape(sn, {2, -1, 12, 16}, "view");
  int back = b.reshape(view, {2, -1, 12, 4, 4}, "back");
  int conv = b.conv(back, 4, 3, 1, "conv");
  ModelInfo viewed = b.build(conv);
  EXPECT_EQ(opCost(viewed, view, 1).activationBytes, 0);
  EXPECT_DOUBLE_EQ(opCost(viewed, view, 1).forwardFlops, 0.0);
  EXPECT_TRUE(producesSpikes(viewed, back));
  EXPECT_EQ(opCost(viewed, conv, 1).activationBytes, 384 / 8);
  // Attention of 2 heads over qkv [T, N, 12, 16]: C = 4, D = 2; it keeps its 384 input
  // values and each step and head's 2 x 2 v k^T: 2 * 2 * 2 * 2 = 16.
  int attention = b.spikingAttention(view, 2, "attention");
  EXPECT_EQ(opCost(b.build(attention), attention, 1).activationBytes, (384 + 16) * 4);
}

TEST(CostModel, ModelTotalsAndLinearInBatch) {
  ModelBuilder b({4, -1, 16}, 4);
  int fc = b.linear(-1, 32, true, "fc");
  int sn = b.neuron(fc, OpKind::LIFNode, "sn");
  ModelInfo model = b.build(sn);
  ModelCost at8 = modelCost(model, 8), at16 = modelCost(model, 16);
  EXPECT_DOUBLE_EQ(at8.forwardFlops, 33792.0 + 4 * 8 * 32 * 7);
  EXPECT_DOUBLE_EQ(at16.forwardFlops, 2 * at8.forwardFlops);
  EXPECT_EQ(at8.paramBytes, 2176);
  EXPECT_EQ(at8.activationBytes, 2048 + 4096); // the linear's input, the neuron's H
  EXPECT_EQ(at8.paramOps, 1);
  EXPECT_EQ(at8.largestOpParamBytes, 2176);
}

TEST(CostModel, WhatTheRuntimeKeepsInAndOutOfSpikingBlocks) {
  // conv -> bn -> lif -> pool -> conv: the runtime fuses bn, lif and pool into one block.
  ModelBuilder b({2, -1, 3, 8, 8}, 2);
  int conv = b.conv(-1, 4, 3, 1, "conv");
  int bn = b.batchNorm(conv, "bn");
  int sn = b.neuron(bn, OpKind::LIFNode, "sn");
  int pool = b.maxPool(sn, 2, "pool");
  int conv2 = b.conv(pool, 4, 3, 1, "conv2");
  ModelInfo model = b.build(conv2);
  for (int op : {bn, sn, pool})
    EXPECT_EQ(spikingBlockStart(model, op), bn) << model.ops[size_t(op)].name;
  EXPECT_EQ(spikingBlockStart(model, conv), -1);
  EXPECT_EQ(spikingBlockStart(model, conv2), -1);
  // At batch 1: the conv's output, BatchNorm's input, is 2*4*8*8 = 512 values.
  EXPECT_EQ(opCost(model, bn, 1).activationBytes, 512 * 4);
  EXPECT_EQ(opCost(model, sn, 1).activationBytes, 512 * 4);  // H, node by node
  EXPECT_EQ(opCost(model, sn, 1).fusedActivationBytes, 0);    // recomputed from bn's input
  EXPECT_EQ(opCost(model, pool, 1).activationBytes, 128);     // one byte of argmax per output
  EXPECT_TRUE(producesSpikes(model, pool));
  EXPECT_FALSE(producesSpikes(model, bn));
  EXPECT_EQ(opCost(model, conv2, 1).activationBytes, 128 / 8); // spikes as bits

  // A BatchNorm read by more than its neuron, or over [T, N, C], runs node by node.
  ModelBuilder shared({2, -1, 3, 8, 8}, 2);
  int c = shared.conv(-1, 4, 3, 1, "conv");
  int n = shared.batchNorm(c, "bn");
  int s = shared.neuron(n, OpKind::IFNode, "sn");
  int sum = shared.residualAdd(n, s, "add");
  ModelInfo branching = shared.build(sum);
  EXPECT_EQ(spikingBlockStart(branching, n), -1);
  EXPECT_EQ(opCost(branching, s, 1).fusedActivationBytes, 512 * 4);
  ModelBuilder flat({2, -1, 16}, 2);
  int norm = flat.batchNorm(-1, "bn");
  int spikes = flat.neuron(norm, OpKind::IFNode, "sn");
  EXPECT_EQ(spikingBlockStart(flat.build(spikes), spikes), -1);
}

TEST(CostModel, Collectives) {
  // A small all-reduce over a power-of-two group: log2 4 = 2 exchanges of the whole tensor
  // (schema/CollectiveAlgorithms.h, as the runtime runs it).
  EXPECT_EQ(allReduceBytes(1000, 4), 2000);
  EXPECT_EQ(allGatherBytes(1000, 4), 750);
  EXPECT_EQ(reduceScatterBytes(1000, 4), 750);
  EXPECT_EQ(allReduceBytes(1000, 1), 0);
  Communication ar = allReduce(1000, 4);
  EXPECT_EQ(ar.collectives, 1);
  EXPECT_EQ(ar.latencySteps, 2);
  Hardware hw;
  hw.linkBytesPerSecond = 1000;
  hw.latencySeconds = 0.5;
  EXPECT_DOUBLE_EQ(ar.seconds(hw), 2.0 + 1.0);
  // Three ranks, or more than 1 MiB: Gloo's ring, 2 (n - 1) steps sending 2 (n - 1) / n.
  EXPECT_EQ(allReduce(3000, 3).latencySteps, 4);
  EXPECT_EQ(allReduceBytes(3000, 3), 4000);
  int64_t large = int64_t(4) << 20;
  EXPECT_EQ(allReduce(large, 4).latencySteps, 6);
  EXPECT_EQ(allReduceBytes(large, 4), large * 3 / 2);
}

TEST(CostModel, DataParallelAndFsdpVolumes) {
  ModelCost cost;
  cost.paramBytes = 4000;
  cost.paramOps = 2;
  Communication dp = dataParallelCommunication(cost, 4);
  EXPECT_EQ(dp.bytes, 2 * 4000); // one small bucket: 2 doubling steps of all of it
  Communication fsdp = fsdpCommunication(cost, 4);
  EXPECT_EQ(fsdp.bytes, 3 * 3000); // gather, re-gather, reduce-scatter
  EXPECT_EQ(fsdp.collectives, 6);
  EXPECT_EQ(fsdp.latencySteps, 6 * 3);
  EXPECT_EQ(dataParallelCommunication(cost, 1).bytes, 0);
}

TEST(CostModel, GradientsAreReducedInTheRuntimesBuckets) {
  ModelCost cost;
  cost.paramBytes = int64_t(snn::schema::kGradientBucketBytes) * 5 / 2; // 2.5 buckets
  Communication dp = dataParallelCommunication(cost, 4);
  ASSERT_EQ(dp.calls.size(), 1u);
  EXPECT_EQ(dp.calls[0].count, 3);
  EXPECT_EQ(dp.calls[0].tensorBytes, cost.paramBytes / 3);
  EXPECT_EQ(dp.collectives, 3);
  EXPECT_EQ(dp.latencySteps, 3 * 6);
  EXPECT_EQ(dp.bytes, allReduceBytes(cost.paramBytes, 4)); // bucketing moves the same bytes
}

TEST(CostModel, SyncBatchNormAllReducesEachLayersStatisticsTwice) {
  ModelInfo model = test::csnn(8); // a BatchNorm after each conv
  std::vector<int64_t> channels;
  for (const OpInfo &op : model.ops)
    if (op.kind == OpKind::BatchNorm)
      channels.push_back(op.outputShape[size_t(op.batchDim + 1)]);
  ASSERT_FALSE(channels.empty());
  Communication sync = syncBatchNormCommunication(model, 4, {});
  ASSERT_EQ(sync.calls.size(), 2 * channels.size());
  for (size_t i = 0; i < channels.size(); ++i) {
    EXPECT_EQ(sync.calls[2 * i].tensorBytes, (2 * channels[i] + 1) * 8); // sum, sum x^2, count
    EXPECT_EQ(sync.calls[2 * i + 1].tensorBytes, 2 * channels[i] * 8);   // the gradient sums
    EXPECT_EQ(sync.calls[2 * i].ranks, 4);
  }
  // A tensor-parallel rank holds half of each layer's channels.
  std::vector<double> half(model.ops.size(), 0.5);
  EXPECT_EQ(syncBatchNormCommunication(model, 4, half).calls[0].tensorBytes,
            (2 * (channels[0] / 2) + 1) * 8);
  EXPECT_TRUE(syncBatchNormCommunication(model, 1, {}).calls.empty());
  EXPECT_EQ(stepMetricsCommunication(4).calls.size(), 1u);
  EXPECT_EQ(stepMetricsCommunication(4).calls[0].tensorBytes, 16);
  EXPECT_TRUE(stepMetricsCommunication(1).calls.empty());
}
