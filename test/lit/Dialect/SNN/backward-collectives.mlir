// --snn-insert-backward-collectives on partitioned IR: where a rank-varying computation reads
// a replicated value that requires a gradient, the use goes through snn.backward_all_reduce
// (its gradient is the sum of the ranks' partial gradients).
// RUN: split-file %s %t
// RUN: snn-opt %t/mlp4.mlir --snn-plan="topology=tp=2 batch-size=8 mode=tp" --snn-partition --snn-insert-backward-collectives | FileCheck %s --check-prefix=MLP4
// RUN: snn-opt %t/plif.mlir --snn-plan="topology=tp=2 batch-size=8 mode=tp" --snn-partition --snn-insert-backward-collectives | FileCheck %s --check-prefix=PLIF
// RUN: snn-opt %t/residual.mlir --snn-plan="topology=tp=2 batch-size=8 mode=tp" --snn-partition --snn-insert-backward-collectives | FileCheck %s --check-prefix=RESIDUAL
// RUN: snn-opt %t/mlp4.mlir --snn-plan="topology=dp=2,tp=2 batch-size=8 mode=fsdp_tp" --snn-partition --snn-insert-backward-collectives | FileCheck %s --check-prefix=MLP4
// RUN: snn-opt %S/Inputs/csnn.mlir --snn-plan="topology=tp=2 batch-size=8 mode=tp experimental-conv-tp" --snn-partition --snn-insert-backward-collectives | FileCheck %s --check-prefix=CONV
// A second run adds nothing; an unpartitioned module is left alone.
// RUN: snn-opt %t/plif.mlir --snn-plan="topology=tp=2 batch-size=8 mode=tp" --snn-partition --snn-insert-backward-collectives -o %t/once.mlir
// RUN: snn-opt %t/once.mlir --snn-insert-backward-collectives -o %t/twice.mlir
// RUN: diff %t/once.mlir %t/twice.mlir
// RUN: snn-opt %t/plif.mlir --snn-plan="topology=tp=2 batch-size=8 mode=tp" --snn-insert-backward-collectives | FileCheck %s --check-prefix=UNPARTITIONED

// Two Megatron pairs: fc1's input is @main's argument (no gradient: nothing inserted); fc3's
// input, sn2, is replicated after fc2's all-reduce and each rank's fc3 reads all of it, so its
// gradient is summed over tp before it flows back into sn2 and the first pair.
// MLP4-LABEL: func.func @main
// MLP4-NOT:   snn.backward_all_reduce
// MLP4:       snn.linear %arg0
// MLP4:       %[[SUM:.*]] = snn.all_reduce
// MLP4-NEXT:  %[[Y:.*]] = snn.bias_add %[[SUM]]
// MLP4-NEXT:  %[[SN2:.*]] = snn.if_node %[[Y]]
// MLP4-NEXT:  %[[G:.*]] = snn.backward_all_reduce %[[SN2]] over "tp" : (tensor<4x?x8xf32>) -> tensor<4x?x8xf32>
// MLP4-NEXT:  snn.linear %[[G]], %{{.*}}, %{{.*}} : (tensor<4x?x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x?x4xf32>
// MLP4-NOT:   snn.backward_all_reduce
// MLP4:       return

// The ParametricLIF on fc1's split output: every rank's neuron reads the whole `w` (replicated)
// but only its own features, so each rank's gradient of `w` is a partial sum. Summed, the
// replicas of `w` get the same update (without it they drift apart).
// PLIF-LABEL: func.func @main
// PLIF-NOT:   snn.backward_all_reduce
// PLIF:       %[[W:.*]] = snn.parameter "sn1.w" = {{.*}} : tensor<f32>
// PLIF-NEXT:  %[[WG:.*]] = snn.backward_all_reduce %[[W]] over "tp" : (tensor<f32>) -> tensor<f32>
// PLIF:       %[[FC1:.*]] = snn.linear %arg0, %{{.*}} -> tensor<4x?x4xf32>
// PLIF-NEXT:  snn.plif_node %[[FC1]], %[[WG]] {{.*}} : tensor<4x?x4xf32>, tensor<f32>
// PLIF-NOT:   snn.backward_all_reduce

// sn2 feeds fc3 (colwise: rank-varying) and the residual add (replicated): only the use by
// fc3 goes through the backward all-reduce.
// RESIDUAL-LABEL: func.func @main
// RESIDUAL:       %[[SN2:.*]] = snn.if_node %{{.*}} : tensor<4x?x8xf32>
// RESIDUAL-NEXT:  %[[G:.*]] = snn.backward_all_reduce %[[SN2]] over "tp"
// RESIDUAL-NEXT:  snn.linear %[[G]], %{{.*}} : (tensor<4x?x8xf32>, tensor<4x8xf32>) -> tensor<4x?x4xf32>
// RESIDUAL:       %[[SUM:.*]] = snn.all_reduce
// RESIDUAL-NEXT:  snn.add %[[SUM]], %[[SN2]] : tensor<4x?x8xf32>

// CSNN with conv TP: conv_fc.0 reads @main's input (no gradient); conv_fc.9, colwise, reads the
// flattened output of the replicated second block.
// CONV-LABEL: func.func @main
// CONV-NOT:   snn.backward_all_reduce
// CONV:       %[[F:.*]] = snn.flatten
// CONV-NEXT:  %[[G:.*]] = snn.backward_all_reduce %[[F]] over "tp" : (tensor<2x?x392xf32>) -> tensor<2x?x392xf32>
// CONV-NEXT:  snn.linear %[[G]], %{{.*}} -> tensor<2x?x64xf32>
// CONV-NOT:   snn.backward_all_reduce

// UNPARTITIONED-NOT: snn.backward_all_reduce

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
  %fc1 = snn.linear %x, %w1, %b1 : (tensor<4x?x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<4x?x8xf32>
  %sn1 = snn.if_node %fc1 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x8xf32>
  %fc2 = snn.linear %sn1, %w2, %b2 : (tensor<4x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x?x8xf32>
  %sn2 = snn.if_node %fc2 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x8xf32>
  %fc3 = snn.linear %sn2, %w3, %b3 : (tensor<4x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x?x8xf32>
  %sn3 = snn.if_node %fc3 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x8xf32>
  %fc4 = snn.linear %sn3, %w4, %b4 : (tensor<4x?x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x?x4xf32>
  %sn4 = snn.if_node %fc4 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x4xf32>
  %out = snn.mean_time %sn4 : (tensor<4x?x4xf32>) -> tensor<?x4xf32>
  return %out : tensor<?x4xf32>
}

//--- plif.mlir
func.func @main(%x: tensor<4x?x16xf32>) -> tensor<?x4xf32> {
  %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x16xf32>
  %pw = snn.parameter "sn1.w" = dense<0.25> : tensor<f32>
  %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
  %0 = snn.linear %x, %w1 : (tensor<4x?x16xf32>, tensor<8x16xf32>) -> tensor<4x?x8xf32> loc("fc1")
  %1 = snn.plif_node %0, %pw {v_threshold = 1.0 : f32, decay_input = true, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x8xf32>, tensor<f32> loc("sn1")
  %2 = snn.linear %1, %w2 : (tensor<4x?x8xf32>, tensor<4x8xf32>) -> tensor<4x?x4xf32> loc("fc2")
  %3 = snn.mean_time %2 : (tensor<4x?x4xf32>) -> tensor<?x4xf32> loc("readout")
  return %3 : tensor<?x4xf32>
}

//--- residual.mlir
func.func @main(%x: tensor<4x?x16xf32>) -> tensor<?x8xf32> {
  %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x16xf32>
  %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<8x8xf32>
  %w3 = snn.parameter "fc3.weight" = dense<0.1> : tensor<8x8xf32>
  %w4 = snn.parameter "fc4.weight" = dense<0.1> : tensor<8x8xf32>
  %fc1 = snn.linear %x, %w1 : (tensor<4x?x16xf32>, tensor<8x16xf32>) -> tensor<4x?x8xf32> loc("fc1")
  %sn1 = snn.if_node %fc1 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x8xf32> loc("sn1")
  %fc2 = snn.linear %sn1, %w2 : (tensor<4x?x8xf32>, tensor<8x8xf32>) -> tensor<4x?x8xf32> loc("fc2")
  %sn2 = snn.if_node %fc2 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x8xf32> loc("sn2")
  %fc3 = snn.linear %sn2, %w3 : (tensor<4x?x8xf32>, tensor<8x8xf32>) -> tensor<4x?x8xf32> loc("fc3")
  %sn3 = snn.if_node %fc3 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x8xf32> loc("sn3")
  %fc4 = snn.linear %sn3, %w4 : (tensor<4x?x8xf32>, tensor<8x8xf32>) -> tensor<4x?x8xf32> loc("fc4")
  %sum = snn.add %fc4, %sn2 : tensor<4x?x8xf32> loc("add")
  %out = snn.mean_time %sum : (tensor<4x?x8xf32>) -> tensor<?x8xf32> loc("readout")
  return %out : tensor<?x8xf32>
}
