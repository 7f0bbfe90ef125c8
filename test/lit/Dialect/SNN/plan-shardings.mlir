// The shard annotations each mode puts on the IR (forced modes, so the checks do not depend
// on the cost model): a shard.grid @mesh, one shard.sharding per distinct split, and a
// shard.shard on the input, every parameter and every activation.
// RUN: snn-opt %s --snn-plan="topology=dp=2 batch-size=8 mode=dp" | FileCheck %s --check-prefixes=COMMON,DP
// RUN: snn-opt %s --snn-plan="topology=dp=2 batch-size=8 mode=zero" | FileCheck %s --check-prefixes=COMMON,DP,ZERO
// RUN: snn-opt %s --snn-plan="topology=dp=2 batch-size=8 mode=fsdp" | FileCheck %s --check-prefixes=COMMON,FSDP
// RUN: snn-opt %s --snn-plan="topology=tp=2 batch-size=8 mode=tp" | FileCheck %s --check-prefixes=COMMON,TP
// RUN: snn-opt %s --snn-plan="topology=dp=2,tp=2 batch-size=8 mode=fsdp_tp" | FileCheck %s --check-prefixes=COMMON,FSDPTP
// RUN: snn-opt %s --snn-plan="topology=pp=2 batch-size=8 mode=pp" | FileCheck %s --check-prefix=PP
// RUN: snn-opt %s --snn-plan="batch-size=8" | FileCheck %s --check-prefix=NONE
// RUN: snn-opt %S/Inputs/csnn.mlir --snn-plan="topology=tp=2 batch-size=8 mode=tp experimental-conv-tp" | FileCheck %s --check-prefix=CONV
// A stored analysis made without conv TP is redone with it when the plan asks for it...
// RUN: snn-opt %S/Inputs/csnn.mlir --snn-analyze=summary=none --snn-plan="topology=tp=2 batch-size=8 mode=tp experimental-conv-tp" | FileCheck %s --check-prefix=CONV
// ...and its roots decide the candidates: conv_fc.9 alone has no rowwise partner, so its
// output is split up to its neuron and gathered there.
// RUN: snn-opt %S/Inputs/csnn.mlir --snn-analyze="roots=conv_fc.9 summary=none" --snn-plan="topology=tp=2 batch-size=8 mode=tp" | FileCheck %s --check-prefix=ROOTS

// COMMON: snn.plan = #snn.plan<
// ZERO-SAME: optimizer_strategy = zero
// TP-SAME: tensor_parallel_pairs = ["fc1 -> fc2"]
// FSDPTP-SAME: mesh_axes = ["dp", "tp"], mesh_shape = [2, 2], dp_mesh_dim = 0, tp_mesh_dim = 1
// FSDPTP-SAME: tensor_parallel_pairs = ["fc1 -> fc2"]

// dp (and zero, whose optimizer sharding is not in the IR): the batch dimension (1 of
// [T, N, ...], 0 of the readout [N, ...]) on the dp axis; parameters replicated.
// DP-DAG:   shard.grid @mesh(shape = 2)
// DP-DAG:   %[[REP:.*]] = shard.sharding @mesh split_axes = {{\[\[\]\]}} : !shard.sharding
// DP-DAG:   %[[BATCH:.*]] = shard.sharding @mesh split_axes = {{\[\[\], \[0\]\]}} : !shard.sharding
// DP-DAG:   %[[OUT:.*]] = shard.sharding @mesh split_axes = {{\[\[0\]\]}} : !shard.sharding
// DP:       %[[X:.*]] = shard.shard %arg0 to %[[BATCH]] : tensor<4x?x16xf32>
// DP:       %[[W1:.*]] = snn.parameter "fc1.weight"
// DP-NEXT:  shard.shard %[[W1]] to %[[REP]] : tensor<8x16xf32>
// DP:       %[[B1:.*]] = snn.parameter "fc1.bias"
// DP-NEXT:  shard.shard %[[B1]] to %[[REP]] : tensor<8xf32>
// DP:       %[[FC1:.*]] = snn.linear %[[X]]
// DP-NEXT:  %[[FC1S:.*]] = shard.shard %[[FC1]] to %[[BATCH]] : tensor<4x?x8xf32>
// DP-NEXT:  %[[SN1:.*]] = snn.lif_node %[[FC1S]]
// DP-NEXT:  shard.shard %[[SN1]] to %[[BATCH]] : tensor<4x?x8xf32>
// DP:       %[[MEAN:.*]] = snn.mean_time
// DP-NEXT:  %[[MEANS:.*]] = shard.shard %[[MEAN]] to %[[OUT]] : tensor<?x4xf32>
// DP-NEXT:  return %[[MEANS]]

// fsdp: as dp, and every parameter split on dimension 0 over dp.
// FSDP-DAG: %[[DIM0:.*]] = shard.sharding @mesh split_axes = {{\[\[0\]\]}} : !shard.sharding
// FSDP-DAG: %[[BATCH:.*]] = shard.sharding @mesh split_axes = {{\[\[\], \[0\]\]}} : !shard.sharding
// FSDP:     %[[W1:.*]] = snn.parameter "fc1.weight"
// FSDP-NEXT: shard.shard %[[W1]] to %[[DIM0]] : tensor<8x16xf32>
// FSDP:     %[[W2:.*]] = snn.parameter "fc2.weight"
// FSDP-NEXT: shard.shard %[[W2]] to %[[DIM0]] : tensor<4x8xf32>
// FSDP:     %[[FC1:.*]] = snn.linear
// FSDP-NEXT: shard.shard %[[FC1]] to %[[BATCH]] : tensor<4x?x8xf32>

// tp: fc1 colwise (weight and bias rows), the LIF's input and state split on features like
// fc1's output, fc2 rowwise (weight columns; its output is whole after the all-reduce), the
// batch whole on every TP rank.
// TP-DAG:   %[[ROWS:.*]] = shard.sharding @mesh split_axes = {{\[\[0\]\]}} : !shard.sharding
// TP-DAG:   %[[COLS:.*]] = shard.sharding @mesh split_axes = {{\[\[\], \[0\]\]}} : !shard.sharding
// TP-DAG:   %[[REP:.*]] = shard.sharding @mesh split_axes = {{\[\[\]\]}} : !shard.sharding
// TP-DAG:   %[[FEAT:.*]] = shard.sharding @mesh split_axes = {{\[\[\], \[\], \[0\]\]}} : !shard.sharding
// TP:       shard.shard %arg0 to %[[REP]]
// TP:       %[[W1:.*]] = snn.parameter "fc1.weight"
// TP-NEXT:  shard.shard %[[W1]] to %[[ROWS]] : tensor<8x16xf32>
// TP:       %[[B1:.*]] = snn.parameter "fc1.bias"
// TP-NEXT:  shard.shard %[[B1]] to %[[ROWS]] : tensor<8xf32>
// TP:       %[[W2:.*]] = snn.parameter "fc2.weight"
// TP-NEXT:  shard.shard %[[W2]] to %[[COLS]] : tensor<4x8xf32>
// TP:       %[[B2:.*]] = snn.parameter "fc2.bias"
// TP-NEXT:  shard.shard %[[B2]] to %[[REP]] : tensor<4xf32>
// TP:       %[[FC1:.*]] = snn.linear
// TP-NEXT:  %[[FC1S:.*]] = shard.shard %[[FC1]] to %[[FEAT]] : tensor<4x?x8xf32>
// TP-NEXT:  %[[SN1:.*]] = snn.lif_node %[[FC1S]]
// TP-NEXT:  shard.shard %[[SN1]] to %[[FEAT]] : tensor<4x?x8xf32>
// TP:       %[[FC2:.*]] = snn.linear
// TP-NEXT:  shard.shard %[[FC2]] to %[[REP]] : tensor<4x?x4xf32>

// fsdp_tp on dp x tp: TP splits as above on axis 1, then FSDP splits dimension 0 on axis 0
// (a colwise weight's rows over tp then dp), activations' batch on axis 0.
// FSDPTP-DAG: shard.grid @mesh(shape = 2x2)
// FSDPTP-DAG: %[[ROWS:.*]] = shard.sharding @mesh split_axes = {{\[\[1, 0\]\]}} : !shard.sharding
// FSDPTP-DAG: %[[ROWCOL:.*]] = shard.sharding @mesh split_axes = {{\[\[0\], \[1\]\]}} : !shard.sharding
// FSDPTP-DAG: %[[BIAS2:.*]] = shard.sharding @mesh split_axes = {{\[\[0\]\]}} : !shard.sharding
// FSDPTP-DAG: %[[FEAT:.*]] = shard.sharding @mesh split_axes = {{\[\[\], \[0\], \[1\]\]}} : !shard.sharding
// FSDPTP-DAG: %[[BATCH:.*]] = shard.sharding @mesh split_axes = {{\[\[\], \[0\]\]}} : !shard.sharding
// FSDPTP:     %[[W1:.*]] = snn.parameter "fc1.weight"
// FSDPTP-NEXT: shard.shard %[[W1]] to %[[ROWS]] : tensor<8x16xf32>
// FSDPTP:     %[[W2:.*]] = snn.parameter "fc2.weight"
// FSDPTP-NEXT: shard.shard %[[W2]] to %[[ROWCOL]] : tensor<4x8xf32>
// FSDPTP:     %[[B2:.*]] = snn.parameter "fc2.bias"
// FSDPTP-NEXT: shard.shard %[[B2]] to %[[BIAS2]] : tensor<4xf32>
// FSDPTP:     %[[FC1:.*]] = snn.linear
// FSDPTP-NEXT: shard.shard %[[FC1]] to %[[FEAT]] : tensor<4x?x8xf32>
// FSDPTP:     %[[FC2:.*]] = snn.linear
// FSDPTP-NEXT: shard.shard %[[FC2]] to %[[BATCH]] : tensor<4x?x4xf32>

// pp: no shardings; every op and parameter carries its logical stage. 4 units (fc1, sn1,
// fc2, sn2 + readout) on 2 ranks with 2 virtual stages each (batch 8 >= 2W).
// PP:      pp_mesh_dim = 0, memopt_level = {{[0-9]+}}, pp_microbatches = 8, pp_schedule = interleaved_1f1b, pp_virtual_stages = 2, pp_layout = [1, 1, 1, 1], pp_memopt_stages = [{{.*}}], pp_delay_wgrad = false, pp_stage_units = {{\[\["fc1"\], \["sn1"\], \["fc2"\], \["sn2"\]\]}}
// PP:      shard.grid @mesh(shape = 2)
// PP-NOT:  shard.sharding
// PP:      snn.parameter "fc1.weight" {{.*}} {snn.pp_stage = 0 : i64}
// PP:      snn.parameter "fc2.weight" {{.*}} {snn.pp_stage = 2 : i64}
// PP:      snn.linear {{.*}}snn.pp_stage = 0 : i64
// PP:      snn.lif_node {{.*}}snn.pp_stage = 1 : i64
// PP:      snn.linear {{.*}}snn.pp_stage = 2 : i64
// PP:      snn.if_node {{.*}}snn.pp_stage = 3 : i64
// PP:      snn.mean_time {{.*}}snn.pp_stage = 3 : i64

// Experimental conv TP on csnn: conv_fc.0 splits its output channels (weight dim 0) with
// its batch_norm (all four per-channel tensors), the IF and the max-pool keep the channel
// split (dim 2 of [T, N, C, H, W]); conv_fc.4 is its rowwise partner (input channels, weight
// dim 1) and everything after it up to the next pair is whole.
// CONV:      tensor_parallel_pairs = ["conv_fc.0 -> conv_fc.4", "conv_fc.9 -> conv_fc.11"]
// CONV-DAG:  %[[OUTC:.*]] = shard.sharding @mesh split_axes = {{\[\[0\]\]}} : !shard.sharding
// CONV-DAG:  %[[INC:.*]] = shard.sharding @mesh split_axes = {{\[\[\], \[0\]\]}} : !shard.sharding
// CONV-DAG:  %[[REP:.*]] = shard.sharding @mesh split_axes = {{\[\[\]\]}} : !shard.sharding
// CONV-DAG:  %[[CHAN:.*]] = shard.sharding @mesh split_axes = {{\[\[\], \[\], \[0\]\]}} : !shard.sharding
// CONV:      %[[W0:.*]] = snn.parameter "conv_fc.0.weight"
// CONV-NEXT: shard.shard %[[W0]] to %[[OUTC]] : tensor<8x1x3x3xf32>
// CONV:      %[[RV:.*]] = snn.parameter "conv_fc.1.running_var" buffer
// CONV-NEXT: shard.shard %[[RV]] to %[[OUTC]] : tensor<8xf32>
// CONV:      %[[W4:.*]] = snn.parameter "conv_fc.4.weight"
// CONV-NEXT: shard.shard %[[W4]] to %[[INC]] : tensor<8x8x3x3xf32>
// CONV:      %[[G5:.*]] = snn.parameter "conv_fc.5.weight"
// CONV-NEXT: shard.shard %[[G5]] to %[[REP]] : tensor<8xf32>
// CONV:      %[[C0:.*]] = snn.conv2d
// CONV-NEXT: shard.shard %[[C0]] to %[[CHAN]] : tensor<2x?x8x28x28xf32>
// CONV:      %[[POOL:.*]] = snn.max_pool2d
// CONV-NEXT: shard.shard %[[POOL]] to %[[CHAN]] : tensor<2x?x8x14x14xf32>
// CONV:      %[[C4:.*]] = snn.conv2d
// CONV-NEXT: shard.shard %[[C4]] to %[[REP]] : tensor<2x?x8x14x14xf32>

// ROOTS:      snn.analysis = #snn.analysis<roots = ["conv_fc.9"], experimental_conv_tp = false,
// ROOTS-SAME: tensor_parallel_candidate_names = ["conv_fc.9"]
// ROOTS-SAME: tensor_parallel_pairs = ["conv_fc.9 (gathered after conv_fc.10)"]
// ROOTS-SAME: notes = [{{.*}}"'conv_fc.9' has no rowwise partner: its output stays split up to 'conv_fc.10' and is all-gathered there"
// ROOTS-DAG:  %[[FEAT:.*]] = shard.sharding @mesh split_axes = {{\[\[\], \[\], \[0\]\]}} : !shard.sharding
// ROOTS-DAG:  %[[REP:.*]] = shard.sharding @mesh split_axes = {{\[\[\]\]}} : !shard.sharding
// ROOTS:      %[[FC9:.*]] = snn.linear
// ROOTS-NEXT: %[[FC9S:.*]] = shard.shard %[[FC9]] to %[[FEAT]]
// ROOTS-NEXT: %[[SN:.*]] = snn.if_node %[[FC9S]]
// ROOTS-NEXT: shard.shard %[[SN]] to %[[FEAT]]
// ROOTS-NEXT: %[[FC11:.*]] = snn.linear
// ROOTS-NEXT: shard.shard %[[FC11]] to %[[REP]]

// One process: a plan, but no grid and no annotations.
// NONE:     snn.plan = #snn.plan<mode = none,
// NONE-NOT: shard.

func.func @main(%x: tensor<4x?x16xf32>) -> tensor<?x4xf32> {
  %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x16xf32> loc("fc1.weight")
  %b1 = snn.parameter "fc1.bias" = dense<0.0> : tensor<8xf32> loc("fc1.bias")
  %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32> loc("fc2.weight")
  %b2 = snn.parameter "fc2.bias" = dense<0.0> : tensor<4xf32> loc("fc2.bias")
  %0 = snn.linear %x, %w1, %b1 : (tensor<4x?x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<4x?x8xf32> loc("fc1")
  %1 = snn.lif_node %0 {tau = 2.0 : f32, decay_input = true, v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x?x8xf32> loc("sn1")
  %2 = snn.linear %1, %w2, %b2 : (tensor<4x?x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x?x4xf32> loc("fc2")
  %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x4xf32> loc("sn2")
  %4 = snn.mean_time %3 : (tensor<4x?x4xf32>) -> tensor<?x4xf32> loc("readout")
  return %4 : tensor<?x4xf32>
}
