// The snn ops' ShardingInterface models (lib/Dialect/SNN/Transforms/*ShardingModels.cpp)
// under upstream's --sharding-propagation and --shard-partition on a tp=2 grid. Only the inputs
// and parameters are annotated (as --snn-plan does for them in tp); propagation derives every
// activation's sharding, and the propagated IR is printed, parsed again and partitioned.
// RUN: snn-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(sharding-propagation))' | FileCheck %s --check-prefix=PROP
// RUN: snn-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(sharding-propagation))' \
// RUN:   | snn-opt -split-input-file --pass-pipeline='builtin.module(func.func(shard-partition))' | FileCheck %s --check-prefix=PART
// Forward-first traversal carries a split through the neuron after an unpaired colwise layer:
// RUN: snn-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(sharding-propagation{traversal=forward-backward},shard-partition))' | FileCheck %s --check-prefix=FWD
// The planner's own annotations (every value annotated) partition the same way:
// RUN: snn-opt %S/plan-shardings.mlir --pass-pipeline='builtin.module(snn-plan{topology=tp=2 batch-size=8 mode=tp},func.func(sharding-propagation,shard-partition))' | FileCheck %s --check-prefix=PLANNED
// RUN: snn-opt %S/plan-shardings.mlir --pass-pipeline='builtin.module(snn-plan{topology=dp=2,tp=2 batch-size=8 mode=fsdp_tp},func.func(sharding-propagation,shard-partition))' | FileCheck %s --check-prefix=FSDPTP
// The conv model: experimental conv TP, and dp, whose batch split stops at batch_norm.
// RUN: snn-opt %S/Inputs/csnn.mlir --pass-pipeline='builtin.module(snn-plan{topology=tp=2 batch-size=8 mode=tp experimental-conv-tp},func.func(sharding-propagation,shard-partition))' | FileCheck %s --check-prefix=CONV
// RUN: snn-opt %S/Inputs/csnn.mlir --pass-pipeline='builtin.module(snn-plan{topology=dp=2 batch-size=8 mode=dp},func.func(sharding-propagation,shard-partition))' | FileCheck %s --check-prefix=DPCONV

// Megatron pair: fc1 colwise (weight and bias rows), fc2 rowwise (weight columns).
// fc1's output is split on the feature dim (2), the LIF keeps the split (operand and result),
// fc2 contracts over the split `in`, so its output is whole (upstream's shard dialect has no
// partial sharding since LLVM 22: the partial sum is the partition method's business).
// PROP-LABEL: func.func @two_layers
// PROP:       %[[FC1:.*]] = snn.linear
// PROP-NEXT:  %[[FEAT:.*]] = shard.sharding @mesh split_axes = {{\[\[\], \[\], \[0\]\]}}
// PROP-NEXT:  %[[FC1S:.*]] = shard.shard %[[FC1]] to %[[FEAT]] : tensor<4x?x8xf32>
// PROP-NEXT:  %[[FEAT1:.*]] = shard.sharding @mesh split_axes = {{\[\[\], \[\], \[0\]\]}}
// PROP-NEXT:  %[[IN1:.*]] = shard.shard %[[FC1S]] to %[[FEAT1]] annotate_for_users : tensor<4x?x8xf32>
// PROP-NEXT:  %[[SN1:.*]] = snn.lif_node %[[IN1]]
// PROP-NEXT:  %[[FEAT2:.*]] = shard.sharding @mesh split_axes = {{\[\[\], \[\], \[0\]\]}}
// PROP-NEXT:  shard.shard %[[SN1]] to %[[FEAT2]] : tensor<4x?x8xf32>
// PROP:       %[[FC2:.*]] = snn.linear
// PROP-NEXT:  %[[REP:.*]] = shard.sharding @mesh split_axes = {{\[\[\]\]}}
// PROP-NEXT:  shard.shard %[[FC2]] to %[[REP]] : tensor<4x?x4xf32>
// PROP:       snn.mean_time
// PROP-NEXT:  shard.sharding @mesh split_axes = {{\[\[\]\]}}

// Per rank: weights sliced locally from the whole parameter, the 8-feature layer is 4 wide,
// fc2 runs without its bias, adds its partial sums with an all-reduce, then adds the whole
// bias (every rank holds it) to the sum.
// PART-LABEL: func.func @two_layers(%arg0: tensor<4x?x16xf32>) -> tensor<?x4xf32>
// PART:       %[[W1:.*]] = snn.parameter "fc1.weight"
// PART-NEXT:  %[[W1L:.*]] = shard.all_slice %[[W1]] on @mesh grid_axes = [0] slice_axis = 0 : tensor<8x16xf32> -> tensor<4x16xf32>
// PART-NEXT:  %[[B1:.*]] = snn.parameter "fc1.bias"
// PART-NEXT:  %[[B1L:.*]] = shard.all_slice %[[B1]] on @mesh grid_axes = [0] slice_axis = 0 : tensor<8xf32> -> tensor<4xf32>
// PART-NEXT:  %[[W2:.*]] = snn.parameter "fc2.weight"
// PART-NEXT:  %[[W2L:.*]] = shard.all_slice %[[W2]] on @mesh grid_axes = [0] slice_axis = 1 : tensor<4x8xf32> -> tensor<4x4xf32>
// PART-NEXT:  %[[B2:.*]] = snn.parameter "fc2.bias"
// PART-NEXT:  %[[FC1:.*]] = snn.linear %arg0, %[[W1L]], %[[B1L]] : (tensor<4x?x16xf32>, tensor<4x16xf32>, tensor<4xf32>) -> tensor<4x?x4xf32>
// PART-NEXT:  %[[SN1:.*]] = snn.lif_node %[[FC1]] {{.*}} : tensor<4x?x4xf32>
// PART-NEXT:  %[[FC2:.*]] = snn.linear %[[SN1]], %[[W2L]] : (tensor<4x?x4xf32>, tensor<4x4xf32>) -> tensor<4x?x4xf32>
// PART-NEXT:  %[[SUM:.*]] = shard.all_reduce %[[FC2]] on @mesh grid_axes = [0] : tensor<4x?x4xf32> -> tensor<4x?x4xf32>
// PART-NEXT:  %[[BIASED:.*]] = snn.bias_add %[[SUM]], %[[B2]] {axis = 2 : i64} : tensor<4x?x4xf32>, tensor<4xf32>
// PART-NEXT:  %[[SN2:.*]] = snn.if_node %[[BIASED]] {{.*}} : tensor<4x?x4xf32>
// PART-NEXT:  %[[MEAN:.*]] = snn.mean_time %[[SN2]] : (tensor<4x?x4xf32>) -> tensor<?x4xf32>
// PART-NEXT:  return %[[MEAN]] : tensor<?x4xf32>
// PART-NOT:   arith.

shard.grid @mesh(shape = 2)
func.func @two_layers(%x: tensor<4x?x16xf32>) -> tensor<?x4xf32> {
  %rows = shard.sharding @mesh split_axes = [[0]] : !shard.sharding
  %cols = shard.sharding @mesh split_axes = [[], [0]] : !shard.sharding
  %rep = shard.sharding @mesh split_axes = [[]] : !shard.sharding
  %xs = shard.shard %x to %rep : tensor<4x?x16xf32>
  %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x16xf32>
  %w1s = shard.shard %w1 to %rows : tensor<8x16xf32>
  %b1 = snn.parameter "fc1.bias" = dense<0.0> : tensor<8xf32>
  %b1s = shard.shard %b1 to %rows : tensor<8xf32>
  %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
  %w2s = shard.shard %w2 to %cols : tensor<4x8xf32>
  %b2 = snn.parameter "fc2.bias" = dense<0.0> : tensor<4xf32>
  %b2s = shard.shard %b2 to %rep : tensor<4xf32>
  %0 = snn.linear %xs, %w1s, %b1s : (tensor<4x?x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<4x?x8xf32>
  %1 = snn.lif_node %0 {tau = 2.0 : f32, decay_input = true, v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x?x8xf32>
  %2 = snn.linear %1, %w2s, %b2s : (tensor<4x?x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x?x4xf32>
  %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x4xf32>
  %4 = snn.mean_time %3 : (tensor<4x?x4xf32>) -> tensor<?x4xf32>
  return %4 : tensor<?x4xf32>
}


// -----

// Three layers, the third colwise without a partner (no biases on fc1 and fc3) and the result
// annotated whole. Upstream's default order (backward first) pulls the whole result back
// through the readout and the last neuron, so fc3's output is gathered before sn3; forward
// first keeps sn3 split (its state too, as the planner does) and gathers before the readout.
// PROP-LABEL: func.func @three_layers
// PROP:       %[[FC3:.*]] = snn.linear %{{.*}} -> tensor<4x?x4xf32>
// PROP-NEXT:  %[[FEAT:.*]] = shard.sharding @mesh split_axes = {{\[\[\], \[\], \[0\]\]}}
// PROP-NEXT:  %[[FC3S:.*]] = shard.shard %[[FC3]] to %[[FEAT]] : tensor<4x?x4xf32>
// PROP-NEXT:  %[[REP:.*]] = shard.sharding @mesh split_axes = {{\[\[\]\]}}
// PROP-NEXT:  %[[IN3:.*]] = shard.shard %[[FC3S]] to %[[REP]] annotate_for_users : tensor<4x?x4xf32>
// PROP-NEXT:  snn.if_node %[[IN3]]

// PART-LABEL: func.func @three_layers
// PART:       %[[FC1:.*]] = snn.linear %arg0, %{{.*}} : (tensor<4x?x16xf32>, tensor<4x16xf32>) -> tensor<4x?x4xf32>
// PART:       %[[FC2:.*]] = snn.linear %{{.*}} : (tensor<4x?x4xf32>, tensor<8x4xf32>) -> tensor<4x?x8xf32>
// PART-NEXT:  %[[SUM:.*]] = shard.all_reduce %[[FC2]] on @mesh grid_axes = [0] : tensor<4x?x8xf32> -> tensor<4x?x8xf32>
// PART-NEXT:  %[[BIASED:.*]] = snn.bias_add %[[SUM]], %{{.*}} {axis = 2 : i64} : tensor<4x?x8xf32>, tensor<8xf32>
// PART-NEXT:  %[[SN2:.*]] = snn.if_node %[[BIASED]]
// PART-NEXT:  %[[FC3:.*]] = snn.linear %[[SN2]], %{{.*}} : (tensor<4x?x8xf32>, tensor<2x8xf32>) -> tensor<4x?x2xf32>
// PART-NEXT:  %[[ALL:.*]] = shard.all_gather %[[FC3]] on @mesh grid_axes = [0] gather_axis = 2 : tensor<4x?x2xf32> -> tensor<4x?x4xf32>
// PART:       snn.if_node %{{.*}} : tensor<4x?x4xf32>

// FWD-LABEL: func.func @three_layers
// FWD:       %[[FC3:.*]] = snn.linear %{{.*}} -> tensor<4x?x2xf32>
// FWD-NEXT:  %[[SN3:.*]] = snn.if_node %[[FC3]] {{.*}} : tensor<4x?x2xf32>
// FWD-NEXT:  %[[ALL:.*]] = shard.all_gather %[[SN3]] on @mesh grid_axes = [0] gather_axis = 2 : tensor<4x?x2xf32> -> tensor<4x?x4xf32>
// FWD:       snn.mean_time %{{.*}} : (tensor<4x?x4xf32>) -> tensor<?x4xf32>


shard.grid @mesh(shape = 2)
func.func @three_layers(%x: tensor<4x?x16xf32>) -> tensor<?x4xf32> {
  %rows = shard.sharding @mesh split_axes = [[0]] : !shard.sharding
  %cols = shard.sharding @mesh split_axes = [[], [0]] : !shard.sharding
  %rep = shard.sharding @mesh split_axes = [[]] : !shard.sharding
  %xs = shard.shard %x to %rep : tensor<4x?x16xf32>
  %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x16xf32>
  %w1s = shard.shard %w1 to %rows : tensor<8x16xf32>
  %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<8x8xf32>
  %w2s = shard.shard %w2 to %cols : tensor<8x8xf32>
  %b2 = snn.parameter "fc2.bias" = dense<0.0> : tensor<8xf32>
  %b2s = shard.shard %b2 to %rep : tensor<8xf32>
  %w3 = snn.parameter "fc3.weight" = dense<0.1> : tensor<4x8xf32>
  %w3s = shard.shard %w3 to %rows : tensor<4x8xf32>
  %0 = snn.linear %xs, %w1s : (tensor<4x?x16xf32>, tensor<8x16xf32>) -> tensor<4x?x8xf32>
  %1 = snn.lif_node %0 {tau = 2.0 : f32, decay_input = true, v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x?x8xf32>
  %2 = snn.linear %1, %w2s, %b2s : (tensor<4x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x?x8xf32>
  %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x8xf32>
  %4 = snn.linear %3, %w3s : (tensor<4x?x8xf32>, tensor<4x8xf32>) -> tensor<4x?x4xf32>
  %5 = snn.if_node %4 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x4xf32>
  %6 = snn.mean_time %5 : (tensor<4x?x4xf32>) -> tensor<?x4xf32>
  %7 = shard.shard %6 to %rep : tensor<?x4xf32>
  return %7 : tensor<?x4xf32>
}

// -----

// T is never split: a T-split input is gathered before the neuron, and a T-split annotation on
// a neuron's result is a local slice of the whole result.
// PROP-LABEL: func.func @time_split
// PROP:       %[[T:.*]] = shard.sharding @mesh split_axes = {{\[\[0\]\]}}
// PROP:       %[[XS:.*]] = shard.shard %arg0 to %[[T]] : tensor<4x?x8xf32>
// PROP-NEXT:  %[[WHOLE:.*]] = shard.sharding @mesh split_axes = {{\[\[\]\]}}
// PROP-NEXT:  %[[IN:.*]] = shard.shard %[[XS]] to %[[WHOLE]] annotate_for_users : tensor<4x?x8xf32>
// PROP-NEXT:  snn.if_node %[[IN]]

// PART-LABEL: func.func @time_split(%arg0: tensor<2x?x8xf32>) -> tensor<2x?x8xf32>
// PART-NEXT:  %[[ALL:.*]] = shard.all_gather %arg0 on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x?x8xf32> -> tensor<4x?x8xf32>
// PART:       %[[SN:.*]] = snn.if_node %{{.*}} : tensor<4x?x8xf32>
// PART-NEXT:  %[[SN2:.*]] = snn.lif_node %[[SN]] {{.*}} : tensor<4x?x8xf32>
// PART-NEXT:  %[[SLICE:.*]] = shard.all_slice %[[SN2]] on @mesh grid_axes = [0] slice_axis = 0 : tensor<4x?x8xf32> -> tensor<2x?x8xf32>
// PART-NEXT:  return %[[SLICE]]

shard.grid @mesh(shape = 2)
func.func @time_split(%x: tensor<4x?x8xf32>) -> tensor<4x?x8xf32> {
  %t = shard.sharding @mesh split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %t : tensor<4x?x8xf32>
  %0 = snn.if_node %xs {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x8xf32>
  %1 = snn.lif_node %0 {tau = 2.0 : f32, decay_input = true, v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x?x8xf32>
  %2 = shard.shard %1 to %t : tensor<4x?x8xf32>
  return %2 : tensor<4x?x8xf32>
}

// -----

// A channel split through a PLIF (its 0-d w whole), dropout, mul, add and flatten: a split of
// d1 of [T, N, d1, d2] is a contiguous block of the flattened dim, so the rowwise linear
// after it needs only the all-reduce.
// PROP-LABEL: func.func @flatten_channels
// PROP:       %[[W:.*]] = snn.parameter "sn.w"
// PROP-NEXT:  %[[REP:.*]] = shard.sharding @mesh split_axes = {{\[\[\]\]}}
// PROP-NEXT:  shard.shard %[[W]] to %[[REP]] : tensor<f32>
// PROP:       %[[F:.*]] = snn.flatten
// PROP-NEXT:  %[[FEAT:.*]] = shard.sharding @mesh split_axes = {{\[\[\], \[\], \[0\]\]}}
// PROP-NEXT:  shard.shard %[[F]] to %[[FEAT]] : tensor<4x?x16xf32>

// PART-LABEL: func.func @flatten_channels(%arg0: tensor<4x?x1x8xf32>) -> tensor<4x?x4xf32>
// PART:       %[[P:.*]] = snn.plif_node %arg0, %{{.*}} : tensor<4x?x1x8xf32>, tensor<f32>
// PART-NEXT:  %[[D:.*]] = snn.dropout %[[P]] {{.*}} : (tensor<4x?x1x8xf32>) -> tensor<4x?x1x8xf32>
// PART-NEXT:  %[[M:.*]] = snn.mul %[[D]], %arg0 : tensor<4x?x1x8xf32>
// PART-NEXT:  %[[A:.*]] = snn.add %[[M]], %[[P]] : tensor<4x?x1x8xf32>
// PART-NEXT:  %[[F:.*]] = snn.flatten %[[A]] : (tensor<4x?x1x8xf32>) -> tensor<4x?x8xf32>
// PART:       %[[FC:.*]] = snn.linear %[[F]], %{{.*}} : (tensor<4x?x8xf32>, tensor<4x8xf32>) -> tensor<4x?x4xf32>
// PART-NEXT:  shard.all_reduce %[[FC]] on @mesh grid_axes = [0]

shard.grid @mesh(shape = 2)
func.func @flatten_channels(%x: tensor<4x?x2x8xf32>) -> tensor<4x?x4xf32> {
  %c = shard.sharding @mesh split_axes = [[], [], [0]] : !shard.sharding
  %xs = shard.shard %x to %c : tensor<4x?x2x8xf32>
  %pw = snn.parameter "sn.w" = dense<0.0> : tensor<f32>
  %p = snn.plif_node %xs, %pw {v_threshold = 1.0 : f32, decay_input = true, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x2x8xf32>, tensor<f32>
  %d = snn.dropout %p {p = 0.5 : f32} : (tensor<4x?x2x8xf32>) -> tensor<4x?x2x8xf32>
  %m = snn.mul %d, %xs : tensor<4x?x2x8xf32>
  %a = snn.add %m, %p : tensor<4x?x2x8xf32>
  %f = snn.flatten %a : (tensor<4x?x2x8xf32>) -> tensor<4x?x16xf32>
  %w = snn.parameter "fc.weight" = dense<0.1> : tensor<4x16xf32>
  %0 = snn.linear %f, %w : (tensor<4x?x16xf32>, tensor<4x16xf32>) -> tensor<4x?x4xf32>
  return %0 : tensor<4x?x4xf32>
}

// -----

// A split of a later flattened dim (d2) is refused: gathered before the flatten.
// PART-LABEL: func.func @flatten_inner(%arg0: tensor<4x?x2x4xf32>) -> tensor<4x?x16xf32>
// PART-NEXT:  %[[ALL:.*]] = shard.all_gather %arg0 on @mesh grid_axes = [0] gather_axis = 3 : tensor<4x?x2x4xf32> -> tensor<4x?x2x8xf32>
// PART:       snn.flatten %{{.*}} : (tensor<4x?x2x8xf32>) -> tensor<4x?x16xf32>

shard.grid @mesh(shape = 2)
func.func @flatten_inner(%x: tensor<4x?x2x8xf32>) -> tensor<4x?x16xf32> {
  %c = shard.sharding @mesh split_axes = [[], [], [], [0]] : !shard.sharding
  %xs = shard.shard %x to %c : tensor<4x?x2x8xf32>
  %f = snn.flatten %xs : (tensor<4x?x2x8xf32>) -> tensor<4x?x16xf32>
  return %f : tensor<4x?x16xf32>
}

// The planner's tp annotations: the same per-rank program as @two_layers.
// PLANNED-LABEL: func.func @main(%arg0: tensor<4x?x16xf32>) -> tensor<?x4xf32>
// PLANNED:       shard.all_slice %{{.*}} slice_axis = 0 : tensor<8x16xf32> -> tensor<4x16xf32>
// PLANNED:       shard.all_slice %{{.*}} slice_axis = 1 : tensor<4x8xf32> -> tensor<4x4xf32>
// PLANNED:       snn.lif_node %{{.*}} : tensor<4x?x4xf32>
// PLANNED:       %[[FC2:.*]] = snn.linear {{.*}} -> tensor<4x?x4xf32>
// PLANNED-NEXT:  %[[SUM:.*]] = shard.all_reduce %[[FC2]] on @mesh grid_axes = [0]
// PLANNED-NEXT:  snn.bias_add %[[SUM]], %{{.*}} {axis = 2 : i64}

// fsdp_tp on dp x tp: each parameter is stored split over both axes and gathered over dp (axis
// 0) before use; fc2's partial sums are reduced over tp (axis 1) only, then its bias added.
// (--snn-partition keeps only the tp split: the runtime does the dp part, see partition.mlir.)
// FSDPTP-LABEL: func.func @main
// FSDPTP:       shard.all_slice %{{.*}} on @mesh grid_axes = [1, 0] slice_axis = 0 : tensor<8x16xf32> -> tensor<2x16xf32>
// FSDPTP-NEXT:  shard.all_gather %{{.*}} on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x16xf32> -> tensor<4x16xf32>
// FSDPTP:       %[[FC2:.*]] = snn.linear {{.*}} : (tensor<4x?x4xf32>, tensor<4x4xf32>) -> tensor<4x?x4xf32>
// FSDPTP-NEXT:  %[[SUM:.*]] = shard.all_reduce %[[FC2]] on @mesh grid_axes = [1]
// FSDPTP-NEXT:  snn.bias_add %[[SUM]], %{{.*}} {axis = 2 : i64} : tensor<4x?x4xf32>, tensor<4xf32>

// conv_fc.0 colwise (output channels; its batch_norm's four per-channel tensors, the IF and
// the max-pool keep the channel split), conv_fc.4 rowwise (input channels): an all-reduce.
// CONV-LABEL: func.func @main
// CONV:       %[[C0:.*]] = snn.conv2d %arg0, {{.*}} : (tensor<2x?x1x28x28xf32>, tensor<4x1x3x3xf32>) -> tensor<2x?x4x28x28xf32>
// CONV-NEXT:  %[[BN:.*]] = snn.batch_norm %[[C0]], {{.*}} : (tensor<2x?x4x28x28xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x?x4x28x28xf32>
// CONV-NEXT:  %[[SN:.*]] = snn.if_node %[[BN]] {{.*}} : tensor<2x?x4x28x28xf32>
// CONV-NEXT:  %[[POOL:.*]] = snn.max_pool2d %[[SN]] {{.*}} -> tensor<2x?x4x14x14xf32>
// CONV-NEXT:  %[[C4:.*]] = snn.conv2d %[[POOL]], {{.*}} : (tensor<2x?x4x14x14xf32>, tensor<8x4x3x3xf32>) -> tensor<2x?x8x14x14xf32>
// CONV-NEXT:  shard.all_reduce %[[C4]] on @mesh grid_axes = [0]

// batch_norm's training statistics reduce over the batch: the dp-split batch is gathered
// before it and sliced again after it (a split batch would need synchronised statistics).
// DPCONV-LABEL: func.func @main
// DPCONV:       %[[C0:.*]] = snn.conv2d
// DPCONV-NEXT:  %[[ALL:.*]] = shard.all_gather %[[C0]] on @mesh grid_axes = [0] gather_axis = 1
// DPCONV-NEXT:  %[[WHOLE:.*]] = tensor.cast %[[ALL]]
// DPCONV-NEXT:  %[[BN:.*]] = snn.batch_norm %[[WHOLE]]
// DPCONV-NEXT:  shard.all_slice %[[BN]] on @mesh grid_axes = [0] slice_axis = 1

// -----

// Spatial dims are never split (a window would cross the shards): gathered before a pool.
// PART-LABEL: func.func @pool_spatial(%arg0: tensor<4x?x8x4x8xf32>) -> tensor<4x?x8x4x4xf32>
// PART-NEXT:  %[[ALL:.*]] = shard.all_gather %arg0 on @mesh grid_axes = [0] gather_axis = 3 : tensor<4x?x8x4x8xf32> -> tensor<4x?x8x8x8xf32>
// PART:       snn.avg_pool2d %{{.*}} : (tensor<4x?x8x8x8xf32>) -> tensor<4x?x8x4x4xf32>

shard.grid @mesh(shape = 2)
func.func @pool_spatial(%x: tensor<4x?x8x8x8xf32>) -> tensor<4x?x8x4x4xf32> {
  %h = shard.sharding @mesh split_axes = [[], [], [], [0]] : !shard.sharding
  %xs = shard.shard %x to %h : tensor<4x?x8x8x8xf32>
  %0 = snn.avg_pool2d %xs {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, ceil_mode = false, count_include_pad = true} : (tensor<4x?x8x8x8xf32>) -> tensor<4x?x8x4x4xf32>
  return %0 : tensor<4x?x8x4x4xf32>
}

// -----

// A grouped (here depthwise) conv's channels are never split: input and weight gathered.
// PART-LABEL: func.func @grouped_conv(%arg0: tensor<4x?x4x8x8xf32>) -> tensor<4x?x8x8x8xf32>
// PART-NEXT:  shard.all_gather %arg0 on @mesh grid_axes = [0] gather_axis = 2 : tensor<4x?x4x8x8xf32> -> tensor<4x?x8x8x8xf32>
// PART:       shard.all_gather %{{.*}} on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x1x3x3xf32> -> tensor<8x1x3x3xf32>
// PART:       snn.conv2d {{.*}} : (tensor<4x?x8x8x8xf32>, tensor<8x1x3x3xf32>) -> tensor<4x?x8x8x8xf32>

shard.grid @mesh(shape = 2)
func.func @grouped_conv(%x: tensor<4x?x8x8x8xf32>) -> tensor<4x?x8x8x8xf32> {
  %c = shard.sharding @mesh split_axes = [[], [], [0]] : !shard.sharding
  %rows = shard.sharding @mesh split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %c : tensor<4x?x8x8x8xf32>
  %w = snn.parameter "dw.weight" = dense<0.1> : tensor<8x1x3x3xf32>
  %ws = shard.shard %w to %rows : tensor<8x1x3x3xf32>
  %0 = snn.conv2d %xs, %ws {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 8 : i64} : (tensor<4x?x8x8x8xf32>, tensor<8x1x3x3xf32>) -> tensor<4x?x8x8x8xf32>
  return %0 : tensor<4x?x8x8x8xf32>
}

// -----

// A rowwise conv (input channels split) with a bias: the local conv runs without it, the
// partial sums are all-reduced and the whole bias is added along the channels (dim 2).
// PART-LABEL: func.func @conv_rowwise_bias(%arg0: tensor<4x?x2x8x8xf32>) -> tensor<4x?x6x8x8xf32>
// PART:       %[[B:.*]] = snn.parameter "conv.bias"
// PART-NEXT:  %[[C:.*]] = snn.conv2d %arg0, %{{.*}} {{{.*}}} : (tensor<4x?x2x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<4x?x6x8x8xf32>
// PART-NEXT:  %[[SUM:.*]] = shard.all_reduce %[[C]] on @mesh grid_axes = [0] : tensor<4x?x6x8x8xf32> -> tensor<4x?x6x8x8xf32>
// PART-NEXT:  %[[Y:.*]] = snn.bias_add %[[SUM]], %[[B]] {axis = 2 : i64} : tensor<4x?x6x8x8xf32>, tensor<6xf32>
// PART-NEXT:  return %[[Y]]

shard.grid @mesh(shape = 2)
func.func @conv_rowwise_bias(%x: tensor<4x?x4x8x8xf32>) -> tensor<4x?x6x8x8xf32> {
  %c = shard.sharding @mesh split_axes = [[], [], [0]] : !shard.sharding
  %cols = shard.sharding @mesh split_axes = [[], [0]] : !shard.sharding
  %rep = shard.sharding @mesh split_axes = [[]] : !shard.sharding
  %xs = shard.shard %x to %c : tensor<4x?x4x8x8xf32>
  %w = snn.parameter "conv.weight" = dense<0.1> : tensor<6x4x3x3xf32>
  %ws = shard.shard %w to %cols : tensor<6x4x3x3xf32>
  %b = snn.parameter "conv.bias" = dense<0.5> : tensor<6xf32>
  %bs = shard.shard %b to %rep : tensor<6xf32>
  %0 = snn.conv2d %xs, %ws, %bs {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<4x?x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<6xf32>) -> tensor<4x?x6x8x8xf32>
  %1 = shard.shard %0 to %rep : tensor<4x?x6x8x8xf32>
  return %1 : tensor<4x?x6x8x8xf32>
}
