// --snn-partition: a tp or fsdp_tp plan's @main -> the per-rank program over the tp axis
// (local shapes, snn collectives named by the mesh axis, no shard op left). Models are planned
// with forced modes, so the checks do not depend on the cost model.
// RUN: split-file %s %t
// RUN: snn-opt %t/mlp2.mlir --snn-plan="topology=tp=2 batch-size=8 mode=tp" --snn-partition | FileCheck %s --check-prefix=MLP2
// RUN: snn-opt %t/mlp3.mlir --snn-plan="topology=tp=2 batch-size=8 mode=tp" --snn-partition | FileCheck %s --check-prefix=MLP3
// RUN: snn-opt %t/mlp4.mlir --snn-plan="topology=tp=4 batch-size=8 mode=tp" --snn-partition | FileCheck %s --check-prefix=MLP4
// RUN: snn-opt %t/mlp5.mlir --snn-plan="topology=tp=2 batch-size=8 mode=tp" --snn-partition | FileCheck %s --check-prefix=MLP5
// fsdp_tp: only the tp part is partitioned (the runtime shards batch and parameters over dp).
// RUN: snn-opt %t/mlp2.mlir --snn-plan="topology=dp=2,tp=2 batch-size=8 mode=fsdp_tp" --snn-partition | FileCheck %s --check-prefix=FSDPTP
// Conv channel TP (experimental): batch_norm runs locally on its split channels.
// RUN: snn-opt %S/Inputs/csnn.mlir --snn-plan="topology=tp=2 batch-size=8 mode=tp experimental-conv-tp" --snn-partition | FileCheck %s --check-prefix=CONV
// A split value that two ops read whole is gathered once (upstream's partition gathers per use).
// RUN: snn-opt %t/two_gathers.mlir --snn-partition | FileCheck %s --check-prefix=GATHER
// Other modes, an unplanned module and an already partitioned one are left as they are.
// RUN: snn-opt %t/mlp2.mlir --snn-plan="topology=dp=2 batch-size=8 mode=dp" --snn-partition | FileCheck %s --check-prefix=DP
// RUN: snn-opt %t/mlp2.mlir --snn-partition | FileCheck %s --check-prefix=NONE
// RUN: snn-opt %t/mlp2.mlir --snn-plan="topology=tp=2 batch-size=8 mode=tp" --snn-partition -o %t/once.mlir
// RUN: snn-opt %t/once.mlir --snn-partition -o %t/twice.mlir
// RUN: diff %t/once.mlir %t/twice.mlir

// Megatron pair on tp=2: fc1 colwise (8 -> 4 features per rank, its bias sliced with its
// rows), fc2 rowwise (partial sums over the 4 local inputs, all-reduced, then the whole bias).
// MLP2-LABEL: module attributes
// MLP2-SAME:  snn.plan = #snn.plan<mode = tp,
// MLP2-SAME:  partitioned = true, predicted = <label = "tp", mesh = "tp=2"{{.*}}>, times = "default constants">
// MLP2-NOT:   shard.
// MLP2-LABEL: func.func @main(%arg0: tensor<4x?x16xf32>) -> tensor<?x4xf32>
// MLP2-NEXT:  %[[W1:.*]] = snn.parameter "fc1.weight" = {{.*}} : tensor<8x16xf32>
// MLP2-NEXT:  %[[W1L:.*]] = snn.all_slice %[[W1]] over "tp" {axis = 0 : i64} : (tensor<8x16xf32>) -> tensor<4x16xf32>
// MLP2-NEXT:  %[[B1:.*]] = snn.parameter "fc1.bias" = {{.*}} : tensor<8xf32>
// MLP2-NEXT:  %[[B1L:.*]] = snn.all_slice %[[B1]] over "tp" {axis = 0 : i64} : (tensor<8xf32>) -> tensor<4xf32>
// MLP2-NEXT:  %[[W2:.*]] = snn.parameter "fc2.weight" = {{.*}} : tensor<4x8xf32>
// MLP2-NEXT:  %[[W2L:.*]] = snn.all_slice %[[W2]] over "tp" {axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x4xf32>
// MLP2-NEXT:  %[[B2:.*]] = snn.parameter "fc2.bias" = {{.*}} : tensor<4xf32>
// MLP2-NEXT:  %[[FC1:.*]] = snn.linear %arg0, %[[W1L]], %[[B1L]] : (tensor<4x?x16xf32>, tensor<4x16xf32>, tensor<4xf32>) -> tensor<4x?x4xf32>
// MLP2-NEXT:  %[[SN1:.*]] = snn.if_node %[[FC1]] {{.*}} : tensor<4x?x4xf32>
// MLP2-NEXT:  %[[FC2:.*]] = snn.linear %[[SN1]], %[[W2L]] : (tensor<4x?x4xf32>, tensor<4x4xf32>) -> tensor<4x?x4xf32>
// MLP2-NEXT:  %[[SUM:.*]] = snn.all_reduce %[[FC2]] over "tp" : (tensor<4x?x4xf32>) -> tensor<4x?x4xf32>
// MLP2-NEXT:  %[[Y:.*]] = snn.bias_add %[[SUM]], %[[B2]] {axis = 2 : i64} : tensor<4x?x4xf32>, tensor<4xf32>
// MLP2-NEXT:  %[[SN2:.*]] = snn.if_node %[[Y]] {{.*}} : tensor<4x?x4xf32>
// MLP2-NEXT:  %[[OUT:.*]] = snn.mean_time %[[SN2]] : (tensor<4x?x4xf32>) -> tensor<?x4xf32>
// MLP2-NEXT:  return %[[OUT]] : tensor<?x4xf32>

// Three layers: the pair fc1 -> fc2, then fc3 colwise without a partner: its output stays
// split through its neuron (state included) and is gathered before the readout.
// MLP3-LABEL: func.func @main
// MLP3:       %[[FC2:.*]] = snn.linear %{{.*}} : (tensor<4x?x4xf32>, tensor<8x4xf32>) -> tensor<4x?x8xf32>
// MLP3-NEXT:  %[[SUM:.*]] = snn.all_reduce %[[FC2]] over "tp"
// MLP3-NEXT:  %[[Y:.*]] = snn.bias_add %[[SUM]], %{{.*}} {axis = 2 : i64} : tensor<4x?x8xf32>, tensor<8xf32>
// MLP3-NEXT:  %[[SN2:.*]] = snn.if_node %[[Y]]
// MLP3-NEXT:  %[[FC3:.*]] = snn.linear %[[SN2]], %{{.*}}, %{{.*}} : (tensor<4x?x8xf32>, tensor<2x8xf32>, tensor<2xf32>) -> tensor<4x?x2xf32>
// MLP3-NEXT:  %[[SN3:.*]] = snn.if_node %[[FC3]] {{.*}} : tensor<4x?x2xf32>
// MLP3-NEXT:  %[[ALL:.*]] = snn.all_gather %[[SN3]] over "tp" {axis = 2 : i64} : (tensor<4x?x2xf32>) -> tensor<4x?x4xf32>
// MLP3-NEXT:  snn.mean_time %[[ALL]] : (tensor<4x?x4xf32>) -> tensor<?x4xf32>

// Four layers on tp=4: two pairs, 2 of 8 features per rank, an all-reduce and a bias_add per
// pair.
// MLP4-LABEL: func.func @main
// MLP4:       snn.linear %arg0, %{{.*}}, %{{.*}} : (tensor<4x?x16xf32>, tensor<2x16xf32>, tensor<2xf32>) -> tensor<4x?x2xf32>
// MLP4:       %[[FC2:.*]] = snn.linear %{{.*}}, %{{.*}} : (tensor<4x?x2xf32>, tensor<8x2xf32>) -> tensor<4x?x8xf32>
// MLP4-NEXT:  %[[SUM2:.*]] = snn.all_reduce %[[FC2]] over "tp"
// MLP4-NEXT:  snn.bias_add %[[SUM2]], %{{.*}} {axis = 2 : i64} : tensor<4x?x8xf32>, tensor<8xf32>
// MLP4:       snn.linear %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x?x8xf32>, tensor<2x8xf32>, tensor<2xf32>) -> tensor<4x?x2xf32>
// MLP4:       %[[FC4:.*]] = snn.linear %{{.*}}, %{{.*}} : (tensor<4x?x2xf32>, tensor<4x2xf32>) -> tensor<4x?x4xf32>
// MLP4-NEXT:  %[[SUM4:.*]] = snn.all_reduce %[[FC4]] over "tp"
// MLP4-NEXT:  snn.bias_add %[[SUM4]], %{{.*}} {axis = 2 : i64} : tensor<4x?x4xf32>, tensor<4xf32>
// MLP4-NOT:   snn.all_gather

// Five layers on tp=2: two pairs, then fc5 unpaired and gathered after its neuron.
// MLP5-LABEL: func.func @main
// MLP5-COUNT-2: snn.all_reduce
// MLP5:       snn.linear %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x?x8xf32>, tensor<2x8xf32>, tensor<2xf32>) -> tensor<4x?x2xf32>
// MLP5-NEXT:  %[[SN5:.*]] = snn.if_node
// MLP5-NEXT:  snn.all_gather %[[SN5]] over "tp" {axis = 2 : i64} : (tensor<4x?x2xf32>) -> tensor<4x?x4xf32>

// fsdp_tp on dp=2 x tp=2: the same program as tp=2 (no dp collective, parameters sliced over
// tp only); the plan keeps its 2-D mesh for the runtime.
// FSDPTP:      snn.plan = #snn.plan<mode = fsdp_tp,
// FSDPTP-SAME: mesh_axes = ["dp", "tp"], mesh_shape = [2, 2], dp_mesh_dim = 0, tp_mesh_dim = 1
// FSDPTP-SAME: partitioned = true, predicted = <label = "fsdp_tp"{{.*}}>, times = "default constants">
// FSDPTP-NOT:  "dp"
// FSDPTP-NOT:  shard.
// FSDPTP:      snn.all_slice %{{.*}} over "tp" {axis = 0 : i64} : (tensor<8x16xf32>) -> tensor<4x16xf32>
// FSDPTP:      snn.all_slice %{{.*}} over "tp" {axis = 0 : i64} : (tensor<8xf32>) -> tensor<4xf32>
// FSDPTP:      snn.all_slice %{{.*}} over "tp" {axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x4xf32>
// FSDPTP:      %[[SUM:.*]] = snn.all_reduce %{{.*}} over "tp" : (tensor<4x?x4xf32>) -> tensor<4x?x4xf32>
// FSDPTP-NEXT: snn.bias_add %[[SUM]]
// FSDPTP-NOT:  "dp"

// CSNN with conv TP: conv_fc.0 colwise (4 of 8 output channels), its batch_norm's weight,
// bias and running statistics sliced alike and applied locally, the neuron and pool on the
// split channels; conv_fc.4 rowwise with an all-reduce; the linears as a Megatron pair.
// CONV-LABEL: func.func @main
// CONV-DAG:   %[[MEAN:.*]] = snn.parameter "conv_fc.1.running_mean" buffer
// CONV-DAG:   %[[MEANL:.*]] = snn.all_slice %[[MEAN]] over "tp" {axis = 0 : i64} : (tensor<8xf32>) -> tensor<4xf32>
// CONV:       %[[C0:.*]] = snn.conv2d %arg0, {{.*}} : (tensor<2x?x1x28x28xf32>, tensor<4x1x3x3xf32>) -> tensor<2x?x4x28x28xf32>
// CONV-NEXT:  %[[BN:.*]] = snn.batch_norm %[[C0]], %{{.*}}, %{{.*}}, %[[MEANL]], %{{.*}} {{.*}} : (tensor<2x?x4x28x28xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x?x4x28x28xf32>
// CONV-NEXT:  %[[SN:.*]] = snn.if_node %[[BN]] {{.*}} : tensor<2x?x4x28x28xf32>
// CONV-NEXT:  %[[POOL:.*]] = snn.max_pool2d %[[SN]] {{.*}} -> tensor<2x?x4x14x14xf32>
// CONV-NEXT:  %[[C4:.*]] = snn.conv2d %[[POOL]], {{.*}} : (tensor<2x?x4x14x14xf32>, tensor<8x4x3x3xf32>) -> tensor<2x?x8x14x14xf32>
// CONV-NEXT:  %[[SUM:.*]] = snn.all_reduce %[[C4]] over "tp" : (tensor<2x?x8x14x14xf32>) -> tensor<2x?x8x14x14xf32>
// CONV-NEXT:  snn.batch_norm %[[SUM]], {{.*}} -> tensor<2x?x8x14x14xf32>
// CONV:       snn.linear {{.*}} -> tensor<2x?x64xf32>
// CONV:       snn.all_reduce {{.*}} : (tensor<2x?x10xf32>) -> tensor<2x?x10xf32>

// GATHER-LABEL: func.func @main
// GATHER:       %[[SN:.*]] = snn.if_node %{{.*}} : tensor<4x?x4xf32>
// GATHER-NEXT:  %[[ALL:.*]] = snn.all_gather %[[SN]] over "tp" {axis = 2 : i64} : (tensor<4x?x4xf32>) -> tensor<4x?x8xf32>
// GATHER-NEXT:  %[[FC2:.*]] = snn.linear %[[ALL]], %{{.*}} : (tensor<4x?x8xf32>, tensor<8x8xf32>) -> tensor<4x?x8xf32>
// GATHER-NEXT:  snn.add %[[FC2]], %[[ALL]] : tensor<4x?x8xf32>
// GATHER-NOT:   snn.all_gather

// DP:      shard.grid @mesh(shape = 2)
// DP-NOT:  partitioned
// DP:      shard.shard
// DP-NOT:  snn.all_

// NONE-NOT: snn.all_
// NONE-NOT: snn.plan

//--- mlp2.mlir
func.func @main(%x: tensor<4x?x16xf32>) -> tensor<?x4xf32> {
  %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x16xf32>
  %b1 = snn.parameter "fc1.bias" = dense<0.0> : tensor<8xf32>
  %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
  %b2 = snn.parameter "fc2.bias" = dense<0.0> : tensor<4xf32>
  %fc1 = snn.linear %x, %w1, %b1 : (tensor<4x?x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<4x?x8xf32> loc("fc1")
  %sn1 = snn.if_node %fc1 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x8xf32> loc("sn1")
  %fc2 = snn.linear %sn1, %w2, %b2 : (tensor<4x?x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x?x4xf32> loc("fc2")
  %sn2 = snn.if_node %fc2 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x4xf32> loc("sn2")
  %out = snn.mean_time %sn2 : (tensor<4x?x4xf32>) -> tensor<?x4xf32> loc("readout")
  return %out : tensor<?x4xf32>
}

//--- mlp3.mlir
func.func @main(%x: tensor<4x?x16xf32>) -> tensor<?x4xf32> {
  %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x16xf32>
  %b1 = snn.parameter "fc1.bias" = dense<0.0> : tensor<8xf32>
  %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<8x8xf32>
  %b2 = snn.parameter "fc2.bias" = dense<0.0> : tensor<8xf32>
  %w3 = snn.parameter "fc3.weight" = dense<0.1> : tensor<4x8xf32>
  %b3 = snn.parameter "fc3.bias" = dense<0.0> : tensor<4xf32>
  %fc1 = snn.linear %x, %w1, %b1 : (tensor<4x?x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<4x?x8xf32> loc("fc1")
  %sn1 = snn.if_node %fc1 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x8xf32> loc("sn1")
  %fc2 = snn.linear %sn1, %w2, %b2 : (tensor<4x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x?x8xf32> loc("fc2")
  %sn2 = snn.if_node %fc2 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x8xf32> loc("sn2")
  %fc3 = snn.linear %sn2, %w3, %b3 : (tensor<4x?x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x?x4xf32> loc("fc3")
  %sn3 = snn.if_node %fc3 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x4xf32> loc("sn3")
  %out = snn.mean_time %sn3 : (tensor<4x?x4xf32>) -> tensor<?x4xf32> loc("readout")
  return %out : tensor<?x4xf32>
}

//--- mlp4.mlir
func.func @main(%x: tensor<4x?x16xf32>) -> tensor<?x4xf32> {
  %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x16xf32>
  %b1 = snn.parameter "fc1.bias" = dense<0.0> : tensor<8xf32>
  %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<8x8xf32>
  %b2 = snn.parameter "fc2.bias" = dense<0.0> : tensor<8xf32>
  %w3 = snn.parameter "fc3.weight" = dense<0.1> : tensor<8x8xf32>
  %b3 = snn.parameter "fc3.bias" = dense<0.0> : tensor<8xf32>
  %w4 = snn.parameter "fc4.weight" = dense<0.1> : tensor<4x8xf32>
  %b4 = snn.parameter "fc4.bias" = dense<0.0> : tensor<4xf32>
  %fc1 = snn.linear %x, %w1, %b1 : (tensor<4x?x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<4x?x8xf32> loc("fc1")
  %sn1 = snn.if_node %fc1 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x8xf32> loc("sn1")
  %fc2 = snn.linear %sn1, %w2, %b2 : (tensor<4x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x?x8xf32> loc("fc2")
  %sn2 = snn.if_node %fc2 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x8xf32> loc("sn2")
  %fc3 = snn.linear %sn2, %w3, %b3 : (tensor<4x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x?x8xf32> loc("fc3")
  %sn3 = snn.if_node %fc3 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x8xf32> loc("sn3")
  %fc4 = snn.linear %sn3, %w4, %b4 : (tensor<4x?x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x?x4xf32> loc("fc4")
  %sn4 = snn.if_node %fc4 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x4xf32> loc("sn4")
  %out = snn.mean_time %sn4 : (tensor<4x?x4xf32>) -> tensor<?x4xf32> loc("readout")
  return %out : tensor<?x4xf32>
}

//--- mlp5.mlir
func.func @main(%x: tensor<4x?x16xf32>) -> tensor<?x4xf32> {
  %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x16xf32>
  %b1 = snn.parameter "fc1.bias" = dense<0.0> : tensor<8xf32>
  %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<8x8xf32>
  %b2 = snn.parameter "fc2.bias" = dense<0.0> : tensor<8xf32>
  %w3 = snn.parameter "fc3.weight" = dense<0.1> : tensor<8x8xf32>
  %b3 = snn.parameter "fc3.bias" = dense<0.0> : tensor<8xf32>
  %w4 = snn.parameter "fc4.weight" = dense<0.1> : tensor<8x8xf32>
  %b4 = snn.parameter "fc4.bias" = dense<0.0> : tensor<8xf32>
  %w5 = snn.parameter "fc5.weight" = dense<0.1> : tensor<4x8xf32>
  %b5 = snn.parameter "fc5.bias" = dense<0.0> : tensor<4xf32>
  %fc1 = snn.linear %x, %w1, %b1 : (tensor<4x?x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<4x?x8xf32> loc("fc1")
  %sn1 = snn.if_node %fc1 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x8xf32> loc("sn1")
  %fc2 = snn.linear %sn1, %w2, %b2 : (tensor<4x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x?x8xf32> loc("fc2")
  %sn2 = snn.if_node %fc2 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x8xf32> loc("sn2")
  %fc3 = snn.linear %sn2, %w3, %b3 : (tensor<4x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x?x8xf32> loc("fc3")
  %sn3 = snn.if_node %fc3 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x8xf32> loc("sn3")
  %fc4 = snn.linear %sn3, %w4, %b4 : (tensor<4x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x?x8xf32> loc("fc4")
  %sn4 = snn.if_node %fc4 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x8xf32> loc("sn4")
  %fc5 = snn.linear %sn4, %w5, %b5 : (tensor<4x?x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x?x4xf32> loc("fc5")
  %sn5 = snn.if_node %fc5 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x4xf32> loc("sn5")
  %out = snn.mean_time %sn5 : (tensor<4x?x4xf32>) -> tensor<?x4xf32> loc("readout")
  return %out : tensor<?x4xf32>
}


//--- two_gathers.mlir
// Hand-annotated: fc1 colwise and its neuron split, then read whole by fc2 and by the add.
module attributes {snn.plan = #snn.plan<mode = tp, objective = speed, optimizer_strategy = none, topology = "tp=2", world_size = 2, batch_size = 8, mesh_axes = ["tp"], mesh_shape = [2], dp_mesh_dim = -1, tp_mesh_dim = 0, pp_mesh_dim = -1, memopt_level = 0, pp_microbatches = 0, pp_schedule = none, pp_virtual_stages = 0, pp_layout = [], pp_memopt_stages = [], pp_delay_wgrad = false, pp_stage_units = [], tensor_parallel_roots = [], tensor_parallel_pairs = [], experimental_conv_tp = false, allow_pipeline = false, allow_zero = false, memory_budget = 0, decided_by = "forced", rationale = [], notes = [], candidates = []>} {
shard.grid @mesh(shape = 2)
func.func @main(%x: tensor<4x?x16xf32>) -> tensor<4x?x8xf32> {
  %rep = shard.sharding @mesh split_axes = [[]] : !shard.sharding
  %rows = shard.sharding @mesh split_axes = [[0]] : !shard.sharding
  %feat = shard.sharding @mesh split_axes = [[], [], [0]] : !shard.sharding
  %xs = shard.shard %x to %rep : tensor<4x?x16xf32>
  %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x16xf32>
  %w1s = shard.shard %w1 to %rows : tensor<8x16xf32>
  %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<8x8xf32>
  %w2s = shard.shard %w2 to %rep : tensor<8x8xf32>
  %0 = snn.linear %xs, %w1s : (tensor<4x?x16xf32>, tensor<8x16xf32>) -> tensor<4x?x8xf32>
  %1 = snn.if_node %0 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x8xf32>
  %sn1s = shard.shard %1 to %feat : tensor<4x?x8xf32>
  %u1 = shard.shard %sn1s to %rep annotate_for_users : tensor<4x?x8xf32>
  %2 = snn.linear %u1, %w2s : (tensor<4x?x8xf32>, tensor<8x8xf32>) -> tensor<4x?x8xf32>
  %fc2s = shard.shard %2 to %rep : tensor<4x?x8xf32>
  %u2 = shard.shard %sn1s to %rep annotate_for_users : tensor<4x?x8xf32>
  %3 = snn.add %fc2s, %u2 : tensor<4x?x8xf32>
  %4 = shard.shard %3 to %rep : tensor<4x?x8xf32>
  return %4 : tensor<4x?x8xf32>
}
}
