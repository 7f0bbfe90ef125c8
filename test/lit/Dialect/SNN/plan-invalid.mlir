// Every planning error (docs/reference-api.md's and ours) as a diagnostic: on the op it is about, else
// on the module. One part per case (split-file), each with its own options.
// RUN: split-file %s %t
// An unknown mode or objective is refused while the pass options are parsed (they are
// schema enums), before any IR is read.
// RUN: not snn-opt %t/unknown_mode.mlir --snn-plan="topology=dp=2 batch-size=8 mode=ddp" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: not snn-opt %t/unknown_mode.mlir --snn-plan="topology=dp=2 batch-size=8 objective=fast" -o /dev/null 2>&1 | FileCheck %s --check-prefix=OBJECTIVE
// MODE: for the --mode option: unknown mode 'ddp' (expected auto, none, dp, zero, fsdp, tp, fsdp_tp or pp)
// OBJECTIVE: for the --objective option: unknown objective 'fast' (expected speed, memory or capacity)
// RUN: snn-opt %t/topology_size.mlir --snn-plan="topology=dp=0 batch-size=8" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/topology_value.mlir --snn-plan="topology=dp=two batch-size=8" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/topology_repeat.mlir --snn-plan="topology=dp=2,dp=2 batch-size=8" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/topology_syntax.mlir --snn-plan="topology=dp batch-size=8" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/mesh_size.mlir --snn-plan="topology=dp=2,tp=2 batch-size=8 world-size=8" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/fsdp_tp_dims.mlir --snn-plan="topology=dp=4 batch-size=8 mode=fsdp_tp" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/fsdp_tp_others.mlir --snn-plan="topology=dp=2,tp=2,pp=2 batch-size=8 mode=fsdp_tp" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/tp_no_candidate.mlir --snn-plan="topology=tp=2 batch-size=8 mode=tp" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/fsdp_tp_no_candidate.mlir --snn-plan="topology=dp=2,tp=2 batch-size=8 mode=fsdp_tp" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/not_divisible.mlir --snn-plan="topology=tp=4 batch-size=8 mode=tp" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/microbatches.mlir --snn-plan="topology=pp=4 batch-size=37 mode=pp" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/batch_below_stages.mlir --snn-plan="topology=pp=4 batch-size=2 mode=pp" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/too_few_units.mlir --snn-plan="topology=pp=8 batch-size=8 mode=pp" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/layout.mlir --snn-plan="topology=pp=2 batch-size=8 mode=pp pp-layout=1|2" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/layout_syntax.mlir --snn-plan="topology=pp=2 batch-size=8 mode=pp pp-layout=1|x" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/schedule_virtual.mlir --snn-plan="topology=pp=2,vpp=2 batch-size=8 mode=pp pp-schedule=1f1b" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/schedule_interleaved.mlir --snn-plan="topology=pp=2 batch-size=2 mode=pp pp-schedule=interleaved_1f1b pp-virtual-stages=1" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/schedule_unknown.mlir --snn-plan="topology=pp=2 batch-size=8 mode=pp pp-schedule=2f2b" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/schedule_microbatches.mlir --snn-plan="topology=pp=2,vpp=2 batch-size=8 mode=pp pp-microbatches=2" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/microbatches_divide.mlir --snn-plan="topology=pp=2 batch-size=8 mode=pp pp-microbatches=3" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/microbatches_negative.mlir --snn-plan="topology=pp=2 batch-size=8 mode=pp pp-microbatches=-1" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/memopt_ratio_zero.mlir --snn-plan="topology=pp=2 batch-size=8 mode=pp memopt-ratio=0" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/memopt_ratio_high.mlir --snn-plan="topology=dp=2 batch-size=8 memopt-ratio=1.5" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/budget.mlir --snn-plan="topology=dp=2 batch-size=8 memory-budget=lots" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/batch_missing.mlir --snn-plan="topology=dp=2" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/batch_below_dp.mlir --snn-plan="topology=dp=8 batch-size=4 mode=dp" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/none_many_ranks.mlir --snn-plan="topology=dp=2 batch-size=8 mode=none" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/mode_one_rank.mlir --snn-plan="batch-size=8 mode=dp" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/one_axis.mlir --snn-plan="topology=dp=2,tp=2 batch-size=8 mode=tp" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/vpp_without_pp.mlir --snn-plan="topology=dp=2,vpp=2 batch-size=8 mode=dp" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/hardware.mlir --snn-plan="topology=dp=2 batch-size=8 device-gflops=0" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/optimizer_states.mlir --snn-plan="topology=dp=2 batch-size=8 optimizer-states=3" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/nothing_fits_world.mlir --snn-plan="topology=dp=4 batch-size=2" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/planned.mlir --snn-plan="batch-size=8" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/no_main.mlir --snn-plan="batch-size=8" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/grid_taken.mlir --snn-plan="topology=dp=2 batch-size=8" -verify-diagnostics -o /dev/null
// The table path checks TP divisibility too (fsdp_tp on (W/2, 2) here).
// RUN: snn-opt %t/table_divisible.mlir --snn-plan="topology=dp=4 batch-size=8 objective=memory cost-model=false" -verify-diagnostics -o /dev/null

//--- unknown_mode.mlir
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- topology_size.mlir
// expected-error@+1 {{topology 'dp=0': size of 'dp' must be a positive integer, got '0'}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- topology_value.mlir
// expected-error@+1 {{topology 'dp=two': size of 'dp' must be a positive integer, got 'two'}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- topology_repeat.mlir
// expected-error@+1 {{topology 'dp=2,dp=2': 'dp' is given twice}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- topology_syntax.mlir
// expected-error@+1 {{topology 'dp': 'dp' is not name=size (expected e.g. dp=2,tp=2)}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- mesh_size.mlir
// expected-error@+1 {{device mesh size 8 != topology world size 4 (dp=2,tp=2)}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- fsdp_tp_dims.mlir
// expected-error@+1 {{mode fsdp_tp needs both a dp and a tp dimension in the topology, got dp=4}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- fsdp_tp_others.mlir
// expected-error@+1 {{mode fsdp_tp uses the dp x tp mesh, but topology dp=2,tp=2,pp=2 has other dimensions larger than 1}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- tp_no_candidate.mlir
// expected-error@+1 {{mode tp needs a tensor-parallel candidate, and the analysis found none under the roots}}
module {
  func.func @main(%x: tensor<2x?x2x4x4xf32>) -> tensor<2x?x4x4x4xf32> {
    %w = snn.parameter "conv.weight" = dense<0.1> : tensor<4x2x3x3xf32>
    %0 = snn.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x?x2x4x4xf32>, tensor<4x2x3x3xf32>) -> tensor<2x?x4x4x4xf32> loc("conv")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4x4x4xf32> loc("sn")
    return %1 : tensor<2x?x4x4x4xf32>
  }
}

//--- fsdp_tp_no_candidate.mlir
// expected-error@+1 {{mode fsdp_tp needs a tensor-parallel candidate, and the analysis found none under the roots}}
module {
  func.func @main(%x: tensor<2x?x2x4x4xf32>) -> tensor<2x?x4x4x4xf32> {
    %w = snn.parameter "conv.weight" = dense<0.1> : tensor<4x2x3x3xf32>
    %0 = snn.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x?x2x4x4xf32>, tensor<4x2x3x3xf32>) -> tensor<2x?x4x4x4xf32> loc("conv")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4x4x4xf32> loc("sn")
    return %1 : tensor<2x?x4x4x4xf32>
  }
}

//--- not_divisible.mlir
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<2x?x8xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<10x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<8x10xf32>
    // expected-error@+1 {{cannot split '<unnamed snn.linear>' (linear) over tp=4: its 10 output features are not divisible by 4}}
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<10x8xf32>) -> tensor<2x?x10xf32>
    %1 = snn.linear %0, %w2 : (tensor<2x?x10xf32>, tensor<8x10xf32>) -> tensor<2x?x8xf32>
    return %1 : tensor<2x?x8xf32>
  }
}

//--- microbatches.mlir
// expected-error@+1 {{no microbatch count in [8, 32] divides batch size 37 for 8 pipeline stages}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<2x?x8xf32> {
    %w0 = snn.parameter "0.weight" = dense<0.1> : tensor<8x8xf32>
    %w1 = snn.parameter "2.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "4.weight" = dense<0.1> : tensor<8x8xf32>
    %w3 = snn.parameter "6.weight" = dense<0.1> : tensor<8x8xf32>
    %l0 = snn.linear %x, %w0 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("0")
    %s0 = snn.if_node %l0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("1")
    %l1 = snn.linear %s0, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("2")
    %s1 = snn.if_node %l1 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("3")
    %l2 = snn.linear %s1, %w2 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("4")
    %s2 = snn.if_node %l2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("5")
    %l3 = snn.linear %s2, %w3 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("6")
    %s3 = snn.if_node %l3 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("7")
    return %s3 : tensor<2x?x8xf32>
  }
}

//--- batch_below_stages.mlir
// expected-error@+1 {{batch size 2 is smaller than the 4 pipeline stages (every stage needs a microbatch)}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<2x?x8xf32> {
    %w0 = snn.parameter "0.weight" = dense<0.1> : tensor<8x8xf32>
    %w1 = snn.parameter "2.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "4.weight" = dense<0.1> : tensor<8x8xf32>
    %w3 = snn.parameter "6.weight" = dense<0.1> : tensor<8x8xf32>
    %l0 = snn.linear %x, %w0 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("0")
    %s0 = snn.if_node %l0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("1")
    %l1 = snn.linear %s0, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("2")
    %s1 = snn.if_node %l1 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("3")
    %l2 = snn.linear %s1, %w2 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("4")
    %s2 = snn.if_node %l2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("5")
    %l3 = snn.linear %s2, %w3 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("6")
    %s3 = snn.if_node %l3 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("7")
    return %s3 : tensor<2x?x8xf32>
  }
}

//--- too_few_units.mlir
// expected-error@+1 {{pp with 8 logical stages needs at least as many stage units (blocks); the model has 4}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- layout.mlir
// expected-error@+1 {{pipeline layout '1|2' places 3 units, the model has 4}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- layout_syntax.mlir
// expected-error@+1 {{pipeline layout '1|x': 'x' is not a unit count (expected counts like 2|3|3)}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- schedule_virtual.mlir
// expected-error@+1 {{pipeline schedule 1f1b needs 1 virtual stage per rank, got 2}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- schedule_interleaved.mlir
// expected-error@+1 {{pipeline schedule interleaved_1f1b needs at least 2 virtual stages per rank, got 1}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- schedule_unknown.mlir
// expected-error@+1 {{unknown pipeline schedule '2f2b' (expected gpipe, 1f1b, interleaved_1f1b or zero_bubble)}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- schedule_microbatches.mlir
// expected-error@+1 {{pipeline needs at least stages x virtual stages = 4 microbatches, got 2}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- microbatches_divide.mlir
// expected-error@+1 {{pipeline microbatches 3 do not divide batch size 8}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- microbatches_negative.mlir
// expected-error@+1 {{pipeline microbatches must not be negative}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- memopt_ratio_zero.mlir
// expected-error@+1 {{memopt ratio must be finite and in (0, 1], got 0}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- memopt_ratio_high.mlir
// expected-error@+1 {{memopt ratio must be finite and in (0, 1], got 1.5}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- budget.mlir
// expected-error@+1 {{memory budget 'lots' is not a positive size (expected e.g. 16GiB, 512MB or 1000000)}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- batch_missing.mlir
// expected-error@+1 {{batch size must be a positive integer (the global batch to plan for), got 0}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- batch_below_dp.mlir
// expected-error@+1 {{batch size 4 is smaller than the dp size 8: every data-parallel rank needs a sample}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- none_many_ranks.mlir
// expected-error@+1 {{mode none runs a single process, but topology dp=2 has world size 2}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- mode_one_rank.mlir
// expected-error@+1 {{mode dp needs more than one rank (topology single process)}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- one_axis.mlir
// expected-error@+1 {{mode tp uses one mesh axis, but topology dp=2,tp=2 has 2 (use fsdp_tp for dp x tp, or a single axis)}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- vpp_without_pp.mlir
// expected-error@+1 {{topology dimension vpp (virtual pipeline stages) needs mode pp}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- hardware.mlir
// expected-error@+1 {{device-gflops and link-gbps must be positive and latency-us not negative}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- optimizer_states.mlir
// expected-error@+1 {{optimizer-states must be 0 (SGD), 1 (SGD with momentum) or 2 (Adam, AdamW), got 3}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- nothing_fits_world.mlir
// expected-error@+1 {{no mode can use 4 ranks at batch size 2 (dp: batch size 2 is smaller than the dp size 4: every data-parallel rank needs a sample; fsdp: batch size 2 is smaller than the dp size 4: every data-parallel rank needs a sample; pp: per data-parallel replica (batch size 2 over dp=2): batch size 1 is smaller than the 2 pipeline stages (every stage needs a microbatch); pp: pp with 4 logical stages needs at least as many stage units (blocks); the model has 2)}}
module {
  func.func @main(%x: tensor<2x?x2x4x4xf32>) -> tensor<2x?x4x4x4xf32> {
    %w = snn.parameter "conv.weight" = dense<0.1> : tensor<4x2x3x3xf32>
    %0 = snn.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x?x2x4x4xf32>, tensor<4x2x3x3xf32>) -> tensor<2x?x4x4x4xf32> loc("conv")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4x4x4xf32> loc("sn")
    return %1 : tensor<2x?x4x4x4xf32>
  }
}

//--- planned.mlir
// expected-error@+1 {{module already has a plan (snn.plan): plan the unplanned IR}}
module attributes {snn.plan = #snn.plan<mode = dp, objective = speed, optimizer_strategy = none, topology = "", world_size = 1, batch_size = 8, mesh_axes = [], mesh_shape = [], dp_mesh_dim = -1, tp_mesh_dim = -1, pp_mesh_dim = -1, memopt_level = 0, pp_microbatches = 0, pp_schedule = none, pp_virtual_stages = 0, pp_layout = [], pp_memopt_stages = [], pp_delay_wgrad = false, pp_stage_units = [], tensor_parallel_roots = [], tensor_parallel_pairs = [], experimental_conv_tp = false, allow_pipeline = false, allow_zero = false, memory_budget = 0, decided_by = "forced", rationale = [], notes = [], candidates = []>} {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- no_main.mlir
// expected-error@+1 {{module has no @main function to plan}}
module {
  func.func @other(%x: tensor<2x?x8xf32>) -> tensor<2x?x8xf32> {
    return %x : tensor<2x?x8xf32>
  }
}

//--- grid_taken.mlir
// expected-error@+1 {{cannot create the plan's grid: symbol @mesh already exists}}
module {
  func.func private @mesh()
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("fc1")
    %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("sn1")
    %2 = snn.linear %1, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("fc2")
    %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn2")
    %4 = snn.mean_time %3 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %4 : tensor<?x4xf32>
  }
}

//--- table_divisible.mlir
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<2x?x8xf32> {
    %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<9x8xf32>
    %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<8x9xf32>
    // expected-error@+1 {{cannot split '<unnamed snn.linear>' (linear) over tp=2: its 9 output features are not divisible by 2}}
    %0 = snn.linear %x, %w1 : (tensor<2x?x8xf32>, tensor<9x8xf32>) -> tensor<2x?x9xf32>
    %1 = snn.linear %0, %w2 : (tensor<2x?x9xf32>, tensor<8x9xf32>) -> tensor<2x?x8xf32>
    return %1 : tensor<2x?x8xf32>
  }
}
