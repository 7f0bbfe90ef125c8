// Every error of --snn-split-pipeline-stages, one line each, on the op or function concerned.
// Hand-written pp plans on pp=2 (two logical stages; three with an empty one).
// RUN: snn-opt %s -split-input-file --snn-split-pipeline-stages -verify-diagnostics -o /dev/null

module attributes {snn.plan = #snn.plan<mode = pp, objective = speed, optimizer_strategy = none, topology = "pp=2", world_size = 2, batch_size = 8, mesh_axes = ["pp"], mesh_shape = [2], dp_mesh_dim = -1, tp_mesh_dim = -1, pp_mesh_dim = 0, memopt_level = 0, pp_microbatches = 8, pp_schedule = "1f1b", pp_virtual_stages = 1, pp_layout = [1, 1], pp_memopt_stages = [], pp_delay_wgrad = false, pp_stage_units = [], tensor_parallel_roots = [], tensor_parallel_pairs = [], experimental_conv_tp = false, allow_pipeline = true, allow_zero = false, memory_budget = 0, decided_by = "forced", rationale = [], notes = [], candidates = []>} {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<2x?x8xf32> {
    %w = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    // expected-error@+1 {{'snn.linear' has no snn.pp_stage: every op of a pp plan's @main needs its logical stage (--snn-plan sets it)}}
    %0 = snn.linear %x, %w : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32>
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32, snn.pp_stage = 1 : i64} : tensor<2x?x8xf32>
    return %1 : tensor<2x?x8xf32>
  }
}

// -----

module attributes {snn.plan = #snn.plan<mode = pp, objective = speed, optimizer_strategy = none, topology = "pp=2", world_size = 2, batch_size = 8, mesh_axes = ["pp"], mesh_shape = [2], dp_mesh_dim = -1, tp_mesh_dim = -1, pp_mesh_dim = 0, memopt_level = 0, pp_microbatches = 8, pp_schedule = "1f1b", pp_virtual_stages = 1, pp_layout = [1, 1], pp_memopt_stages = [], pp_delay_wgrad = false, pp_stage_units = [], tensor_parallel_roots = [], tensor_parallel_pairs = [], experimental_conv_tp = false, allow_pipeline = true, allow_zero = false, memory_budget = 0, decided_by = "forced", rationale = [], notes = [], candidates = []>} {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<2x?x8xf32> {
    %w = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %0 = snn.linear %x, %w {snn.pp_stage = 0 : i64} : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32>
    // expected-error@+1 {{'snn.if_node' has snn.pp_stage 2, outside the plan's logical stages 0 to 1}}
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32, snn.pp_stage = 2 : i64} : tensor<2x?x8xf32>
    return %1 : tensor<2x?x8xf32>
  }
}

// -----

// The linear is in stage 1 but its neuron, which reads it, in stage 0.
module attributes {snn.plan = #snn.plan<mode = pp, objective = speed, optimizer_strategy = none, topology = "pp=2", world_size = 2, batch_size = 8, mesh_axes = ["pp"], mesh_shape = [2], dp_mesh_dim = -1, tp_mesh_dim = -1, pp_mesh_dim = 0, memopt_level = 0, pp_microbatches = 8, pp_schedule = "1f1b", pp_virtual_stages = 1, pp_layout = [1, 1], pp_memopt_stages = [], pp_delay_wgrad = false, pp_stage_units = [], tensor_parallel_roots = [], tensor_parallel_pairs = [], experimental_conv_tp = false, allow_pipeline = true, allow_zero = false, memory_budget = 0, decided_by = "forced", rationale = [], notes = [], candidates = []>} {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<2x?x8xf32> {
    %w = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %0 = snn.linear %x, %w {snn.pp_stage = 1 : i64} : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32>
    // expected-error@+1 {{'snn.if_node' in logical stage 0 reads a value computed in stage 1: a stage may only read values of its own or earlier stages}}
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32, snn.pp_stage = 0 : i64} : tensor<2x?x8xf32>
    %2 = snn.add %1, %0 {snn.pp_stage = 1 : i64} : tensor<2x?x8xf32>
    return %2 : tensor<2x?x8xf32>
  }
}

// -----

// Tied weights: one parameter read by a linear of each stage.
module attributes {snn.plan = #snn.plan<mode = pp, objective = speed, optimizer_strategy = none, topology = "pp=2", world_size = 2, batch_size = 8, mesh_axes = ["pp"], mesh_shape = [2], dp_mesh_dim = -1, tp_mesh_dim = -1, pp_mesh_dim = 0, memopt_level = 0, pp_microbatches = 8, pp_schedule = "1f1b", pp_virtual_stages = 1, pp_layout = [1, 1], pp_memopt_stages = [], pp_delay_wgrad = false, pp_stage_units = [], tensor_parallel_roots = [], tensor_parallel_pairs = [], experimental_conv_tp = false, allow_pipeline = true, allow_zero = false, memory_budget = 0, decided_by = "forced", rationale = [], notes = [], candidates = []>} {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<2x?x8xf32> {
    // expected-error@+1 {{parameter 'shared.weight' is used by logical stages 0 and 1: each stage's program holds its own parameters, so one cannot be shared}}
    %w = snn.parameter "shared.weight" = dense<0.1> : tensor<8x8xf32> {snn.pp_stage = 0 : i64}
    %0 = snn.linear %x, %w {snn.pp_stage = 0 : i64} : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32>
    %1 = snn.linear %0, %w {snn.pp_stage = 1 : i64} : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32>
    return %1 : tensor<2x?x8xf32>
  }
}

// -----

// A layout 1|0|1 leaves stage 1 without an op.
module attributes {snn.plan = #snn.plan<mode = pp, objective = speed, optimizer_strategy = none, topology = "pp=3", world_size = 3, batch_size = 8, mesh_axes = ["pp"], mesh_shape = [3], dp_mesh_dim = -1, tp_mesh_dim = -1, pp_mesh_dim = 0, memopt_level = 0, pp_microbatches = 8, pp_schedule = "1f1b", pp_virtual_stages = 1, pp_layout = [1, 0, 1], pp_memopt_stages = [], pp_delay_wgrad = false, pp_stage_units = [], tensor_parallel_roots = [], tensor_parallel_pairs = [], experimental_conv_tp = false, allow_pipeline = true, allow_zero = false, memory_budget = 0, decided_by = "forced", rationale = [], notes = [], candidates = []>} {
  // expected-error@+1 {{logical stage 1 has no ops: the pipeline layout [1, 0, 1] leaves it empty}}
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<2x?x8xf32> {
    %w = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %0 = snn.linear %x, %w {snn.pp_stage = 0 : i64} : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32>
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32, snn.pp_stage = 2 : i64} : tensor<2x?x8xf32>
    return %1 : tensor<2x?x8xf32>
  }
}

// -----

// expected-error@+1 {{module has no @main function to split into pipeline stages}}
module attributes {snn.plan = #snn.plan<mode = pp, objective = speed, optimizer_strategy = none, topology = "pp=2", world_size = 2, batch_size = 8, mesh_axes = ["pp"], mesh_shape = [2], dp_mesh_dim = -1, tp_mesh_dim = -1, pp_mesh_dim = 0, memopt_level = 0, pp_microbatches = 8, pp_schedule = "1f1b", pp_virtual_stages = 1, pp_layout = [1, 1], pp_memopt_stages = [], pp_delay_wgrad = false, pp_stage_units = [], tensor_parallel_roots = [], tensor_parallel_pairs = [], experimental_conv_tp = false, allow_pipeline = true, allow_zero = false, memory_budget = 0, decided_by = "forced", rationale = [], notes = [], candidates = []>} {
  func.func @other(%x: tensor<2x?x8xf32>) -> tensor<2x?x8xf32> {
    return %x : tensor<2x?x8xf32>
  }
}
