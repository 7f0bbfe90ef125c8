// What the snn ops' partition methods refuse (lib/Dialect/SNN/Transforms/*ShardingModels.cpp,
// their shared checks in ShardingInterfaceImpl.cpp).
// --sharding-propagation never splits a dimension an snn op keeps whole (T; spatial dims of
// convs and pools; batch_norm's statistics dims; a grouped conv's channels): it gathers
// instead, see sharding-interface.mlir. So those cases are hand-annotated IR given straight to
// upstream's --shard-partition; a dimension that does not divide also comes through
// propagation.
// RUN: split-file %s %t
// RUN: snn-opt %t/partition.mlir -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(shard-partition))' -o /dev/null
// RUN: snn-opt %t/propagated.mlir -verify-diagnostics --pass-pipeline='builtin.module(func.func(sharding-propagation,shard-partition))' -o /dev/null

//--- partition.mlir
// A neuron whose input and state would be split over T.
shard.grid @mesh(shape = 2)
func.func @neuron_time(%x: tensor<4x?x8xf32>) -> tensor<4x?x8xf32> {
  %t = shard.sharding @mesh split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %t : tensor<4x?x8xf32>
  %xu = shard.shard %xs to %t annotate_for_users : tensor<4x?x8xf32>
  // expected-error @below {{'snn.if_node' op cannot split dimension 0 of operand #0 over grid axes [0]: it is T, which is never split (neuron state flows from step to step)}}
  %0 = snn.if_node %xu {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x8xf32>
  %1 = shard.shard %0 to %t : tensor<4x?x8xf32>
  return %1 : tensor<4x?x8xf32>
}

// -----

// A stateless layer refuses it too (so that no T split reaches a neuron).
shard.grid @mesh(shape = 2)
func.func @linear_time(%x: tensor<4x?x16xf32>) -> tensor<4x?x8xf32> {
  %rep = shard.sharding @mesh split_axes = [[]] : !shard.sharding
  %t = shard.sharding @mesh split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %rep : tensor<4x?x16xf32>
  %xu = shard.shard %xs to %rep annotate_for_users : tensor<4x?x16xf32>
  %w = snn.parameter "fc.weight" = dense<0.1> : tensor<8x16xf32>
  %ws = shard.shard %w to %rep : tensor<8x16xf32>
  %wu = shard.shard %ws to %rep annotate_for_users : tensor<8x16xf32>
  // expected-error @below {{'snn.linear' op cannot split dimension 0 of result #0 over grid axes [0]: it is T}}
  %0 = snn.linear %xu, %wu : (tensor<4x?x16xf32>, tensor<8x16xf32>) -> tensor<4x?x8xf32>
  %1 = shard.shard %0 to %t : tensor<4x?x8xf32>
  return %1 : tensor<4x?x8xf32>
}

// -----

// The readout reduces over T: its input cannot be split there either.
shard.grid @mesh(shape = 2)
func.func @mean_time(%x: tensor<4x?x8xf32>) -> tensor<?x8xf32> {
  %rep = shard.sharding @mesh split_axes = [[]] : !shard.sharding
  %t = shard.sharding @mesh split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %t : tensor<4x?x8xf32>
  %xu = shard.shard %xs to %t annotate_for_users : tensor<4x?x8xf32>
  // expected-error @below {{'snn.mean_time' op cannot split dimension 0 of operand #0 over grid axes [0]: it is T}}
  %0 = snn.mean_time %xu : (tensor<4x?x8xf32>) -> tensor<?x8xf32>
  %1 = shard.shard %0 to %rep : tensor<?x8xf32>
  return %1 : tensor<?x8xf32>
}

// -----

// batch_norm's statistics reduce over the batch.
shard.grid @mesh(shape = 2)
func.func @batch_norm_batch(%x: tensor<4x?x8x4x4xf32>) -> tensor<4x?x8x4x4xf32> {
  %rep = shard.sharding @mesh split_axes = [[]] : !shard.sharding
  %n = shard.sharding @mesh split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %n : tensor<4x?x8x4x4xf32>
  %xu = shard.shard %xs to %n annotate_for_users : tensor<4x?x8x4x4xf32>
  %g = snn.parameter "bn.weight" = dense<1.0> : tensor<8xf32>
  %gs = shard.shard %g to %rep : tensor<8xf32>
  %gu = shard.shard %gs to %rep annotate_for_users : tensor<8xf32>
  // expected-error @below {{'snn.batch_norm' op cannot split dimension 1 of operand #0 over grid axes [0]: batch_norm's statistics reduce over it}}
  %0 = snn.batch_norm %xu, %gu, %gu, %gu, %gu {eps = 1.0e-5 : f32, momentum = 0.1 : f32} : (tensor<4x?x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x?x8x4x4xf32>
  %1 = shard.shard %0 to %n : tensor<4x?x8x4x4xf32>
  return %1 : tensor<4x?x8x4x4xf32>
}

// -----

// A pool's spatial dims.
shard.grid @mesh(shape = 2)
func.func @pool_spatial(%x: tensor<4x?x8x8x8xf32>) -> tensor<4x?x8x4x4xf32> {
  %h = shard.sharding @mesh split_axes = [[], [], [], [0]] : !shard.sharding
  %xs = shard.shard %x to %h : tensor<4x?x8x8x8xf32>
  %xu = shard.shard %xs to %h annotate_for_users : tensor<4x?x8x8x8xf32>
  // expected-error @below {{'snn.max_pool2d' op cannot split dimension 3 of operand #0 over grid axes [0]: spatial dims are never split (windows would cross shards)}}
  %0 = snn.max_pool2d %xu {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, ceil_mode = false} : (tensor<4x?x8x8x8xf32>) -> tensor<4x?x8x4x4xf32>
  %1 = shard.shard %0 to %h : tensor<4x?x8x4x4xf32>
  return %1 : tensor<4x?x8x4x4xf32>
}

// -----

// A grouped conv's channels.
shard.grid @mesh(shape = 2)
func.func @grouped_conv(%x: tensor<4x?x8x8x8xf32>) -> tensor<4x?x8x8x8xf32> {
  %rep = shard.sharding @mesh split_axes = [[]] : !shard.sharding
  %c = shard.sharding @mesh split_axes = [[], [], [0]] : !shard.sharding
  %rows = shard.sharding @mesh split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %rep : tensor<4x?x8x8x8xf32>
  %xu = shard.shard %xs to %rep annotate_for_users : tensor<4x?x8x8x8xf32>
  %w = snn.parameter "dw.weight" = dense<0.1> : tensor<8x1x3x3xf32>
  %ws = shard.shard %w to %rows : tensor<8x1x3x3xf32>
  %wu = shard.shard %ws to %rows annotate_for_users : tensor<8x1x3x3xf32>
  // expected-error @below {{'snn.conv2d' op cannot split dimension 0 of operand #1 over grid axes [0]: a grouped conv's channels are never split}}
  %0 = snn.conv2d %xu, %wu {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 8 : i64} : (tensor<4x?x8x8x8xf32>, tensor<8x1x3x3xf32>) -> tensor<4x?x8x8x8xf32>
  %1 = shard.shard %0 to %c : tensor<4x?x8x8x8xf32>
  return %1 : tensor<4x?x8x8x8xf32>
}

// -----

// A feature dim that does not divide by the processes of its axes: the activation (fc's
// output, 6 features on tp=4).
shard.grid @mesh(shape = 4)
func.func @feature_not_divisible(%x: tensor<4x?x16xf32>) -> tensor<4x?x6xf32> {
  %rep = shard.sharding @mesh split_axes = [[]] : !shard.sharding
  %feat = shard.sharding @mesh split_axes = [[], [], [0]] : !shard.sharding
  %xs = shard.shard %x to %rep : tensor<4x?x16xf32>
  %xu = shard.shard %xs to %rep annotate_for_users : tensor<4x?x16xf32>
  %w = snn.parameter "fc.weight" = dense<0.1> : tensor<6x16xf32>
  %ws = shard.shard %w to %rep : tensor<6x16xf32>
  %wu = shard.shard %ws to %rep annotate_for_users : tensor<6x16xf32>
  // expected-error @below {{'snn.linear' op cannot split dimension 2 (size 6) of result #0 over the 4 processes of grid axes [0]: it does not divide}}
  %0 = snn.linear %xu, %wu : (tensor<4x?x16xf32>, tensor<6x16xf32>) -> tensor<4x?x6xf32>
  %1 = shard.shard %0 to %feat : tensor<4x?x6xf32>
  return %1 : tensor<4x?x6xf32>
}

//--- propagated.mlir
// Only the input and the colwise weight annotated (as the planner would if it did not refuse a
// tp size that does not divide the layer): the weight's partition refuses the split.
shard.grid @mesh(shape = 4)
func.func @weight_not_divisible(%x: tensor<4x?x16xf32>) -> tensor<4x?x6xf32> {
  %rep = shard.sharding @mesh split_axes = [[]] : !shard.sharding
  %rows = shard.sharding @mesh split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %rep : tensor<4x?x16xf32>
  // expected-error @below {{'snn.parameter' op cannot split dimension 0 (size 6) of result #0 over the 4 processes of grid axes [0]: it does not divide}}
  %w = snn.parameter "fc.weight" = dense<0.1> : tensor<6x16xf32>
  %ws = shard.shard %w to %rows : tensor<6x16xf32>
  %0 = snn.linear %xs, %ws : (tensor<4x?x16xf32>, tensor<6x16xf32>) -> tensor<4x?x6xf32>
  return %0 : tensor<4x?x6xf32>
}
