// What the exporter refuses in a partitioned module, each as one error naming the culprit,
// leaving no directory behind.
// RUN: split-file %s %t
// RUN: snn-translate --export-artifact %t/shard_collective.mlir -o %t/art --verify-diagnostics
// RUN: snn-translate --export-artifact %t/sliced_twice.mlir -o %t/art --verify-diagnostics
// RUN: snn-translate --export-artifact %t/sliced_and_whole.mlir -o %t/art --verify-diagnostics
// RUN: not test -e %t/art

//--- shard_collective.mlir
// Upstream's partition output, not yet turned into snn collectives by --snn-partition.
shard.grid @mesh(shape = 2)
func.func @main(%x: tensor<4x?x4xf32>) -> tensor<4x?x4xf32> {
  %w = snn.parameter "fc.weight" = dense<0.1> : tensor<4x8xf32>
  // expected-error @below {{cannot export 'shard.all_slice': run --snn-partition to turn shard collectives into snn ones}}
  %ws = shard.all_slice %w on @mesh grid_axes = [0] slice_axis = 1 : tensor<4x8xf32> -> tensor<4x4xf32>
  %0 = snn.linear %x, %ws : (tensor<4x?x4xf32>, tensor<4x4xf32>) -> tensor<4x?x4xf32>
  %1 = shard.all_reduce %0 on @mesh grid_axes = [0] : tensor<4x?x4xf32> -> tensor<4x?x4xf32>
  return %1 : tensor<4x?x4xf32>
}

//--- sliced_twice.mlir
// Program i stores one part of a parameter: two slices of it would need two.
module attributes {snn.plan = #snn.plan<mode = tp, objective = speed, optimizer_strategy = none, topology = "tp=2", world_size = 2, batch_size = 8, mesh_axes = ["tp"], mesh_shape = [2], dp_mesh_dim = -1, tp_mesh_dim = 0, pp_mesh_dim = -1, memopt_level = 0, pp_microbatches = 0, pp_schedule = none, pp_virtual_stages = 0, pp_layout = [], pp_memopt_stages = [], pp_delay_wgrad = false, pp_stage_units = [], tensor_parallel_roots = [], tensor_parallel_pairs = [], experimental_conv_tp = false, allow_pipeline = false, allow_zero = false, memory_budget = 0, decided_by = "forced", rationale = [], notes = [], candidates = [], partitioned = true>} {
func.func @main(%x: tensor<4x?x8xf32>) -> tensor<4x?x8xf32> {
  // expected-error @below {{parameter 'fc.weight' is sliced 2 times: a partitioned artifact stores one part of it per program}}
  %w = snn.parameter "fc.weight" = dense<0.1> : tensor<8x8xf32>
  %rows = snn.all_slice %w over "tp" {axis = 0 : i64} : (tensor<8x8xf32>) -> tensor<4x8xf32>
  %cols = snn.all_slice %w over "tp" {axis = 1 : i64} : (tensor<8x8xf32>) -> tensor<8x4xf32>
  %0 = snn.linear %x, %rows : (tensor<4x?x8xf32>, tensor<4x8xf32>) -> tensor<4x?x4xf32>
  %1 = snn.linear %0, %cols : (tensor<4x?x4xf32>, tensor<8x4xf32>) -> tensor<4x?x8xf32>
  %2 = snn.all_reduce %1 over "tp" : (tensor<4x?x8xf32>) -> tensor<4x?x8xf32>
  return %2 : tensor<4x?x8xf32>
}
}

//--- sliced_and_whole.mlir
// The whole parameter is not in the artifact, only each program's part.
module attributes {snn.plan = #snn.plan<mode = tp, objective = speed, optimizer_strategy = none, topology = "tp=2", world_size = 2, batch_size = 8, mesh_axes = ["tp"], mesh_shape = [2], dp_mesh_dim = -1, tp_mesh_dim = 0, pp_mesh_dim = -1, memopt_level = 0, pp_microbatches = 0, pp_schedule = none, pp_virtual_stages = 0, pp_layout = [], pp_memopt_stages = [], pp_delay_wgrad = false, pp_stage_units = [], tensor_parallel_roots = [], tensor_parallel_pairs = [], experimental_conv_tp = false, allow_pipeline = false, allow_zero = false, memory_budget = 0, decided_by = "forced", rationale = [], notes = [], candidates = [], partitioned = true>} {
func.func @main(%x: tensor<4x?x8xf32>) -> tensor<4x?x8xf32> {
  // expected-error @below {{parameter 'fc.weight' is used both sliced and whole: a partitioned artifact stores only its part}}
  %w = snn.parameter "fc.weight" = dense<0.1> : tensor<8x8xf32>
  %rows = snn.all_slice %w over "tp" {axis = 0 : i64} : (tensor<8x8xf32>) -> tensor<4x8xf32>
  %0 = snn.linear %x, %rows : (tensor<4x?x8xf32>, tensor<4x8xf32>) -> tensor<4x?x4xf32>
  %1 = snn.all_gather %0 over "tp" {axis = 2 : i64} : (tensor<4x?x4xf32>) -> tensor<4x?x8xf32>
  %2 = snn.linear %1, %w : (tensor<4x?x8xf32>, tensor<8x8xf32>) -> tensor<4x?x8xf32>
  return %2 : tensor<4x?x8xf32>
}
}
