// What --snn-partition refuses, each as one error naming the culprit. The dropout case comes
// from the planner; the others are hand-annotated tp plans (as a user or a later planner
// could write them).
// RUN: split-file %s %t
// RUN: snn-opt %t/dropout.mlir --snn-plan="topology=tp=2 batch-size=8 mode=tp" --snn-partition -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/conv_without_flag.mlir --snn-partition -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/not_divisible.mlir --snn-partition -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/unannotated.mlir --snn-partition -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/all_to_all.mlir --snn-partition -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/split_output.mlir --snn-partition -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/no_tp_axis.mlir --snn-partition -verify-diagnostics -o /dev/null

//--- dropout.mlir
// The planner keeps fc1's feature split through sn1 and the dropout up to fc2, its partner.
func.func @main(%x: tensor<4x?x16xf32>) -> tensor<?x4xf32> {
  %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x16xf32>
  %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
  %0 = snn.linear %x, %w1 : (tensor<4x?x16xf32>, tensor<8x16xf32>) -> tensor<4x?x8xf32>
  %1 = snn.if_node %0 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x8xf32>
  // expected-error @below {{dropout on a tensor-parallel split value (split over mesh axis 'tp') is not supported: its parts would need independent masks, while replicated values need the same mask on every rank}}
  %2 = snn.dropout %1 {p = 0.5 : f32} : (tensor<4x?x8xf32>) -> tensor<4x?x8xf32>
  %3 = snn.linear %2, %w2 : (tensor<4x?x8xf32>, tensor<4x8xf32>) -> tensor<4x?x4xf32>
  %4 = snn.mean_time %3 : (tensor<4x?x4xf32>) -> tensor<?x4xf32>
  return %4 : tensor<?x4xf32>
}

//--- conv_without_flag.mlir
// A conv's output channels split by hand under a plan without experimental conv TP.
module attributes {snn.plan = #snn.plan<mode = tp, objective = speed, optimizer_strategy = none, topology = "tp=2", world_size = 2, batch_size = 8, mesh_axes = ["tp"], mesh_shape = [2], dp_mesh_dim = -1, tp_mesh_dim = 0, pp_mesh_dim = -1, memopt_level = 0, pp_microbatches = 0, pp_schedule = none, pp_virtual_stages = 0, pp_layout = [], pp_memopt_stages = [], pp_delay_wgrad = false, pp_stage_units = [], tensor_parallel_roots = [], tensor_parallel_pairs = [], experimental_conv_tp = false, allow_pipeline = false, allow_zero = false, memory_budget = 0, decided_by = "forced", rationale = [], notes = [], candidates = []>} {
shard.grid @mesh(shape = 2)
func.func @main(%x: tensor<2x?x2x4x4xf32>) -> tensor<2x?x4x4x4xf32> {
  %rep = shard.sharding @mesh split_axes = [[]] : !shard.sharding
  %rows = shard.sharding @mesh split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %rep : tensor<2x?x2x4x4xf32>
  %w = snn.parameter "conv.weight" = dense<0.1> : tensor<4x2x3x3xf32>
  %ws = shard.shard %w to %rows : tensor<4x2x3x3xf32>
  // expected-error @below {{conv2d channel split over mesh axis 'tp' needs experimental conv TP (plan with experimental-conv-tp)}}
  %0 = snn.conv2d %xs, %ws {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x?x2x4x4xf32>, tensor<4x2x3x3xf32>) -> tensor<2x?x4x4x4xf32>
  %1 = snn.if_node %0 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4x4x4xf32>
  %2 = shard.shard %1 to %rep : tensor<2x?x4x4x4xf32>
  return %2 : tensor<2x?x4x4x4xf32>
}
}

//--- not_divisible.mlir
// 6 output features over tp=4 (the planner refuses this itself, plan-invalid.mlir): the
// weight's partition names the dimension, once, and the pass fails without crashing.
module attributes {snn.plan = #snn.plan<mode = tp, objective = speed, optimizer_strategy = none, topology = "tp=4", world_size = 4, batch_size = 8, mesh_axes = ["tp"], mesh_shape = [4], dp_mesh_dim = -1, tp_mesh_dim = 0, pp_mesh_dim = -1, memopt_level = 0, pp_microbatches = 0, pp_schedule = none, pp_virtual_stages = 0, pp_layout = [], pp_memopt_stages = [], pp_delay_wgrad = false, pp_stage_units = [], tensor_parallel_roots = [], tensor_parallel_pairs = [], experimental_conv_tp = false, allow_pipeline = false, allow_zero = false, memory_budget = 0, decided_by = "forced", rationale = [], notes = [], candidates = []>} {
shard.grid @mesh(shape = 4)
func.func @main(%x: tensor<4x?x16xf32>) -> tensor<4x?x16xf32> {
  %rep = shard.sharding @mesh split_axes = [[]] : !shard.sharding
  %rows = shard.sharding @mesh split_axes = [[0]] : !shard.sharding
  %cols = shard.sharding @mesh split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %rep : tensor<4x?x16xf32>
  // expected-error @below {{'snn.parameter' op cannot split dimension 0 (size 6) of result #0 over the 4 processes of grid axes [0]: it does not divide}}
  %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<6x16xf32>
  %w1s = shard.shard %w1 to %rows : tensor<6x16xf32>
  %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<16x6xf32>
  %w2s = shard.shard %w2 to %cols : tensor<16x6xf32>
  %0 = snn.linear %xs, %w1s : (tensor<4x?x16xf32>, tensor<6x16xf32>) -> tensor<4x?x6xf32>
  %1 = snn.linear %0, %w2s : (tensor<4x?x6xf32>, tensor<16x6xf32>) -> tensor<4x?x16xf32>
  %2 = shard.shard %1 to %rep : tensor<4x?x16xf32>
  return %2 : tensor<4x?x16xf32>
}
}

//--- unannotated.mlir
// Nothing annotated: propagation has no sharding to spread, and upstream's partition would
// crash on the unannotated input; the pass stops before it.
module attributes {snn.plan = #snn.plan<mode = tp, objective = speed, optimizer_strategy = none, topology = "tp=2", world_size = 2, batch_size = 8, mesh_axes = ["tp"], mesh_shape = [2], dp_mesh_dim = -1, tp_mesh_dim = 0, pp_mesh_dim = -1, memopt_level = 0, pp_microbatches = 0, pp_schedule = none, pp_virtual_stages = 0, pp_layout = [], pp_memopt_stages = [], pp_delay_wgrad = false, pp_stage_units = [], tensor_parallel_roots = [], tensor_parallel_pairs = [], experimental_conv_tp = false, allow_pipeline = false, allow_zero = false, memory_budget = 0, decided_by = "forced", rationale = [], notes = [], candidates = []>} {
shard.grid @mesh(shape = 2)
// expected-error @below {{cannot partition: block argument #0 needs exactly one use, its sharding (the sharding propagation left it unannotated)}}
func.func @main(%x: tensor<4x?x8xf32>) -> tensor<4x?x8xf32> {
  %0 = snn.add %x, %x : tensor<4x?x8xf32>
  %1 = snn.mul %x, %0 : tensor<4x?x8xf32>
  return %1 : tensor<4x?x8xf32>
}
}

//--- all_to_all.mlir
// Moving a split from one dim to another is an all-to-all, which no snn collective does.
module attributes {snn.plan = #snn.plan<mode = tp, objective = speed, optimizer_strategy = none, topology = "tp=2", world_size = 2, batch_size = 8, mesh_axes = ["tp"], mesh_shape = [2], dp_mesh_dim = -1, tp_mesh_dim = 0, pp_mesh_dim = -1, memopt_level = 0, pp_microbatches = 0, pp_schedule = none, pp_virtual_stages = 0, pp_layout = [], pp_memopt_stages = [], pp_delay_wgrad = false, pp_stage_units = [], tensor_parallel_roots = [], tensor_parallel_pairs = [], experimental_conv_tp = false, allow_pipeline = false, allow_zero = false, memory_budget = 0, decided_by = "forced", rationale = [], notes = [], candidates = []>} {
shard.grid @mesh(shape = 2)
func.func @main(%x: tensor<4x?x8xf32>, %y: tensor<4x?x8xf32>) -> tensor<4x?x8xf32> {
  %f = shard.sharding @mesh split_axes = [[], [], [0]] : !shard.sharding
  %n = shard.sharding @mesh split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %f : tensor<4x?x8xf32>
  // expected-error @below {{'shard.all_to_all' has no snn counterpart: the partitioned program cannot hold it}}
  %ys = shard.shard %y to %n : tensor<4x?x8xf32>
  %0 = snn.add %xs, %ys : tensor<4x?x8xf32>
  return %0 : tensor<4x?x8xf32>
}
}

//--- split_output.mlir
// A colwise layer whose split result is returned: each rank would return a part.
module attributes {snn.plan = #snn.plan<mode = tp, objective = speed, optimizer_strategy = none, topology = "tp=2", world_size = 2, batch_size = 8, mesh_axes = ["tp"], mesh_shape = [2], dp_mesh_dim = -1, tp_mesh_dim = 0, pp_mesh_dim = -1, memopt_level = 0, pp_microbatches = 0, pp_schedule = none, pp_virtual_stages = 0, pp_layout = [], pp_memopt_stages = [], pp_delay_wgrad = false, pp_stage_units = [], tensor_parallel_roots = [], tensor_parallel_pairs = [], experimental_conv_tp = false, allow_pipeline = false, allow_zero = false, memory_budget = 0, decided_by = "forced", rationale = [], notes = [], candidates = []>} {
shard.grid @mesh(shape = 2)
// expected-error @below {{the partition over mesh axis 'tp' splits @main's input or output ('(tensor<4x?x16xf32>) -> tensor<4x?x8xf32>' became '(tensor<4x?x16xf32>) -> tensor<4x?x4xf32>'): every rank takes the whole input and returns the whole output}}
func.func @main(%x: tensor<4x?x16xf32>) -> tensor<4x?x8xf32> {
  %rep = shard.sharding @mesh split_axes = [[]] : !shard.sharding
  %rows = shard.sharding @mesh split_axes = [[0]] : !shard.sharding
  %feat = shard.sharding @mesh split_axes = [[], [], [0]] : !shard.sharding
  %xs = shard.shard %x to %rep : tensor<4x?x16xf32>
  %w = snn.parameter "fc.weight" = dense<0.1> : tensor<8x16xf32>
  %ws = shard.shard %w to %rows : tensor<8x16xf32>
  %0 = snn.linear %xs, %ws : (tensor<4x?x16xf32>, tensor<8x16xf32>) -> tensor<4x?x8xf32>
  %1 = shard.shard %0 to %feat : tensor<4x?x8xf32>
  return %1 : tensor<4x?x8xf32>
}
}

//--- no_tp_axis.mlir
// expected-error @below {{plan mode 'tp' has no tp axis in its mesh (tp_mesh_dim -1)}}
module attributes {snn.plan = #snn.plan<mode = tp, objective = speed, optimizer_strategy = none, topology = "tp=2", world_size = 2, batch_size = 8, mesh_axes = ["tp"], mesh_shape = [2], dp_mesh_dim = -1, tp_mesh_dim = -1, pp_mesh_dim = -1, memopt_level = 0, pp_microbatches = 0, pp_schedule = none, pp_virtual_stages = 0, pp_layout = [], pp_memopt_stages = [], pp_delay_wgrad = false, pp_stage_units = [], tensor_parallel_roots = [], tensor_parallel_pairs = [], experimental_conv_tp = false, allow_pipeline = false, allow_zero = false, memory_budget = 0, decided_by = "forced", rationale = [], notes = [], candidates = []>} {
func.func @main(%x: tensor<4x?x8xf32>) -> tensor<4x?x8xf32> {
  return %x : tensor<4x?x8xf32>
}
}
