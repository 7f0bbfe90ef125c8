// RUN: snn-opt %s --snn-plan="topology=tp=2 batch-size=8 mode=tp" | FileCheck %s
// RUN: snn-opt %s --pass-pipeline='builtin.module(snn-plan{topology=tp=2 batch-size=8 mode=tp},func.func(sharding-propagation,shard-partition))' | FileCheck %s --check-prefix=PART
// The last linear has no rowwise partner: its output stays split up to the neuron the
// function returns, and the return takes that neuron's result whole (an annotation for its
// users), so the partition gathers it and @main keeps its whole result type.

// CHECK-LABEL: func.func @main
// CHECK-DAG: %[[WHOLE:.*]] = shard.sharding @mesh split_axes = {{\[\[\]\]}}
// CHECK-DAG: %[[SPLIT:.*]] = shard.sharding @mesh split_axes = {{\[\[\], \[\], \[0\]\]}}
// CHECK: %[[S:.*]] = snn.if_node
// CHECK: %[[A:.*]] = shard.shard %[[S]] to %[[SPLIT]] : tensor<4x?x6xf32>
// CHECK: %[[R:.*]] = shard.shard %[[A]] to %[[WHOLE]] annotate_for_users : tensor<4x?x6xf32>
// CHECK: return %[[R]]

// PART-LABEL: func.func @main
// PART-SAME: -> tensor<4x?x6xf32>
// PART: shard.all_gather {{.*}} : tensor<4x?x3xf32> -> tensor<4x?x6xf32>
// PART: return
func.func @main(%x: tensor<4x?x8xf32> {snn.name = "input"}) -> tensor<4x?x6xf32> {
  %w = snn.parameter "fc.weight" = dense<0.1> : tensor<6x8xf32>
  %b = snn.parameter "fc.bias" = dense<0.1> : tensor<6xf32>
  %0 = snn.linear %x, %w, %b : (tensor<4x?x8xf32>, tensor<6x8xf32>, tensor<6xf32>) -> tensor<4x?x6xf32>
  %1 = snn.if_node %0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x6xf32>
  return %1 : tensor<4x?x6xf32>
}
