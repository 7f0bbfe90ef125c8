// What the exporter refuses in a split pipeline module (hand-written pp plans on pp=2), each
// as one error naming the culprit, leaving no directory behind. An unsplit pp plan:
// artifact-planned.mlir.
// RUN: split-file %s %t
// RUN: snn-translate --export-artifact %t/missing_stage.mlir -o %t/art --verify-diagnostics
// RUN: snn-translate --export-artifact %t/stage_twice.mlir -o %t/art --verify-diagnostics
// RUN: snn-translate --export-artifact %t/not_a_stage.mlir -o %t/art --verify-diagnostics
// RUN: snn-translate --export-artifact %t/boundary.mlir -o %t/art --verify-diagnostics
// RUN: snn-translate --export-artifact %t/indivisible.mlir -o %t/art --verify-diagnostics
// RUN: not test -e %t/art

//--- missing_stage.mlir
// expected-error @below {{no function for logical pipeline stage 1 of the plan's 2}}
module attributes {snn.plan = #snn.plan<mode = pp, objective = speed, optimizer_strategy = none, topology = "pp=2", world_size = 2, batch_size = 8, mesh_axes = ["pp"], mesh_shape = [2], dp_mesh_dim = -1, tp_mesh_dim = -1, pp_mesh_dim = 0, memopt_level = 0, pp_microbatches = 8, pp_schedule = "1f1b", pp_virtual_stages = 1, pp_layout = [1, 1], pp_memopt_stages = [], pp_delay_wgrad = false, pp_stage_units = [], tensor_parallel_roots = [], tensor_parallel_pairs = [], experimental_conv_tp = false, allow_pipeline = true, allow_zero = false, memory_budget = 0, decided_by = "forced", rationale = [], notes = [], candidates = []>} {
  func.func @stage_0(%x: tensor<2x?x8xf32>) attributes {snn.pp_stage = 0 : i64} {
    snn.send %x to stage 1 slot 0 : tensor<2x?x8xf32>
    return
  }
}

//--- stage_twice.mlir
module attributes {snn.plan = #snn.plan<mode = pp, objective = speed, optimizer_strategy = none, topology = "pp=2", world_size = 2, batch_size = 8, mesh_axes = ["pp"], mesh_shape = [2], dp_mesh_dim = -1, tp_mesh_dim = -1, pp_mesh_dim = 0, memopt_level = 0, pp_microbatches = 8, pp_schedule = "1f1b", pp_virtual_stages = 1, pp_layout = [1, 1], pp_memopt_stages = [], pp_delay_wgrad = false, pp_stage_units = [], tensor_parallel_roots = [], tensor_parallel_pairs = [], experimental_conv_tp = false, allow_pipeline = true, allow_zero = false, memory_budget = 0, decided_by = "forced", rationale = [], notes = [], candidates = []>} {
  func.func @stage_0(%x: tensor<2x?x8xf32>) attributes {snn.pp_stage = 0 : i64} {
    snn.send %x to stage 1 slot 0 : tensor<2x?x8xf32>
    return
  }
  // expected-error @below {{@again has logical stage 0: the plan has 2 logical stages, each in one function}}
  func.func @again(%x: tensor<2x?x8xf32>) attributes {snn.pp_stage = 0 : i64} {
    return
  }
}

//--- not_a_stage.mlir
module attributes {snn.plan = #snn.plan<mode = pp, objective = speed, optimizer_strategy = none, topology = "pp=2", world_size = 2, batch_size = 8, mesh_axes = ["pp"], mesh_shape = [2], dp_mesh_dim = -1, tp_mesh_dim = -1, pp_mesh_dim = 0, memopt_level = 0, pp_microbatches = 8, pp_schedule = "1f1b", pp_virtual_stages = 1, pp_layout = [1, 1], pp_memopt_stages = [], pp_delay_wgrad = false, pp_stage_units = [], tensor_parallel_roots = [], tensor_parallel_pairs = [], experimental_conv_tp = false, allow_pipeline = true, allow_zero = false, memory_budget = 0, decided_by = "forced", rationale = [], notes = [], candidates = []>} {
  // expected-error @below {{@helper is not a pipeline stage (no snn.pp_stage): a split pp module holds only stage functions}}
  func.func @helper(%x: tensor<2x?x8xf32>) -> tensor<2x?x8xf32> {
    return %x : tensor<2x?x8xf32>
  }
}

//--- boundary.mlir
module attributes {snn.plan = #snn.plan<mode = pp, objective = speed, optimizer_strategy = none, topology = "pp=2", world_size = 2, batch_size = 8, mesh_axes = ["pp"], mesh_shape = [2], dp_mesh_dim = -1, tp_mesh_dim = -1, pp_mesh_dim = 0, memopt_level = 0, pp_microbatches = 8, pp_schedule = "1f1b", pp_virtual_stages = 1, pp_layout = [1, 1], pp_memopt_stages = [], pp_delay_wgrad = false, pp_stage_units = [], tensor_parallel_roots = [], tensor_parallel_pairs = [], experimental_conv_tp = false, allow_pipeline = true, allow_zero = false, memory_budget = 0, decided_by = "forced", rationale = [], notes = [], candidates = []>} {
  func.func @stage_0(%x: tensor<2x?x8xf32>) attributes {snn.pp_stage = 0 : i64} {
    snn.send %x to stage 1 slot 0 : tensor<2x?x8xf32>
    return
  }
  // expected-error @below {{@stage_1 takes 1 input(s) and returns 1: only the first stage takes the model's input and only the last returns its output}}
  func.func @stage_1(%y: tensor<2x?x8xf32>) -> tensor<2x?x8xf32> attributes {snn.pp_stage = 1 : i64} {
    %0 = snn.recv from stage 0 slot 0 : tensor<2x?x8xf32>
    %1 = snn.add %0, %y : tensor<2x?x8xf32>
    return %1 : tensor<2x?x8xf32>
  }
}

//--- indivisible.mlir
// expected-error @below {{the plan's 3 logical pipeline stages do not divide over pp=2}}
module attributes {snn.plan = #snn.plan<mode = pp, objective = speed, optimizer_strategy = none, topology = "pp=2", world_size = 2, batch_size = 8, mesh_axes = ["pp"], mesh_shape = [2], dp_mesh_dim = -1, tp_mesh_dim = -1, pp_mesh_dim = 0, memopt_level = 0, pp_microbatches = 8, pp_schedule = "1f1b", pp_virtual_stages = 1, pp_layout = [1, 1, 1], pp_memopt_stages = [], pp_delay_wgrad = false, pp_stage_units = [], tensor_parallel_roots = [], tensor_parallel_pairs = [], experimental_conv_tp = false, allow_pipeline = true, allow_zero = false, memory_budget = 0, decided_by = "forced", rationale = [], notes = [], candidates = []>} {
  func.func @stage_0(%x: tensor<2x?x8xf32>) attributes {snn.pp_stage = 0 : i64} {
    snn.send %x to stage 1 slot 0 : tensor<2x?x8xf32>
    return
  }
  func.func @stage_1() attributes {snn.pp_stage = 1 : i64} {
    %0 = snn.recv from stage 0 slot 0 : tensor<2x?x8xf32>
    snn.send %0 to stage 2 slot 0 : tensor<2x?x8xf32>
    return
  }
  func.func @stage_2() -> tensor<2x?x8xf32> attributes {snn.pp_stage = 2 : i64} {
    %0 = snn.recv from stage 1 slot 0 : tensor<2x?x8xf32>
    %1 = snn.add %0, %0 : tensor<2x?x8xf32>
    return %1 : tensor<2x?x8xf32>
  }
}
