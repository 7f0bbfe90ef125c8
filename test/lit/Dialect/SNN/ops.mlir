// RUN: snn-opt %s | snn-opt | FileCheck %s
// Round trip of every snn op through the printer and parser.

// CHECK-LABEL: func.func @layers
func.func @layers(%x: tensor<4x?x1x8x8xf32>) -> tensor<?x10xf32> {
  // CHECK: snn.parameter "conv.weight" = dense<5.000000e-01> : tensor<4x1x3x3xf32>
  %w = snn.parameter "conv.weight" = dense<0.5> : tensor<4x1x3x3xf32>
  %b = snn.parameter "conv.bias" = dense<0.0> : tensor<4xf32>
  %g = snn.parameter "bn.weight" = dense<1.0> : tensor<4xf32>
  // CHECK: snn.parameter "bn.running_mean" buffer
  %rm = snn.parameter "bn.running_mean" buffer = dense<0.0> : tensor<4xf32>
  // CHECK: snn.conv2d %{{.*}}, %{{.*}}, %{{.*}} {{.*}} -> tensor<4x?x4x8x8xf32>
  %0 = snn.conv2d %x, %w, %b {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<4x?x1x8x8xf32>, tensor<4x1x3x3xf32>, tensor<4xf32>) -> tensor<4x?x4x8x8xf32>
  // CHECK: snn.batch_norm
  %1 = snn.batch_norm %0, %g, %b, %rm, %g {eps = 1.0e-5 : f32, momentum = 0.1 : f32} : (tensor<4x?x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4x?x4x8x8xf32>
  // CHECK: snn.max_pool2d {{.*}} -> tensor<4x?x4x4x4xf32>
  %2 = snn.max_pool2d %1 {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, ceil_mode = false} : (tensor<4x?x4x8x8xf32>) -> tensor<4x?x4x4x4xf32>
  // CHECK: snn.avg_pool2d {{.*}} -> tensor<4x?x4x2x2xf32>
  %3 = snn.avg_pool2d %2 {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, ceil_mode = false, count_include_pad = true} : (tensor<4x?x4x4x4xf32>) -> tensor<4x?x4x2x2xf32>
  // CHECK: snn.adaptive_avg_pool2d {{.*}} -> tensor<4x?x4x1x1xf32>
  %4 = snn.adaptive_avg_pool2d %3 {output_size = array<i64: 1, 1>} : (tensor<4x?x4x2x2xf32>) -> tensor<4x?x4x1x1xf32>
  // CHECK: snn.flatten {{.*}} -> tensor<4x?x4xf32>
  %5 = snn.flatten %4 : (tensor<4x?x4x1x1xf32>) -> tensor<4x?x4xf32>
  // CHECK: snn.dropout
  %6 = snn.dropout %5 {p = 0.5 : f32} : (tensor<4x?x4xf32>) -> tensor<4x?x4xf32>
  %fw = snn.parameter "fc.weight" = dense<0.1> : tensor<10x4xf32>
  // CHECK: snn.linear {{.*}} -> tensor<4x?x10xf32>
  %7 = snn.linear %6, %fw : (tensor<4x?x4xf32>, tensor<10x4xf32>) -> tensor<4x?x10xf32>
  // CHECK: snn.add
  %8 = snn.add %7, %7 : tensor<4x?x10xf32>
  // CHECK: snn.mul
  %9 = snn.mul %8, %7 : tensor<4x?x10xf32>
  // CHECK: snn.mean_time {{.*}} -> tensor<?x10xf32>
  %10 = snn.mean_time %9 : (tensor<4x?x10xf32>) -> tensor<?x10xf32>
  return %10 : tensor<?x10xf32>
}

// CHECK-LABEL: func.func @neurons
func.func @neurons(%x: tensor<4x2x3xf32>) -> tensor<4x2x3xf32> {
  // CHECK: snn.if_node {{.*}}v_reset = 0.000000e+00
  %0 = snn.if_node %x {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x2x3xf32>
  // CHECK: snn.lif_node {{.*}}surrogate = #snn<surrogate atan>, tau = 1.333
  %1 = snn.lif_node %0 {tau = 1.333 : f32, decay_input = false, v_threshold = 1.0 : f32, detach_reset = true, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x2x3xf32>
  %w = snn.parameter "sn.w" = dense<0.0> : tensor<f32>
  // CHECK: snn.plif_node {{.*}} : tensor<4x2x3xf32>, tensor<f32>
  %2 = snn.plif_node %1, %w {decay_input = true, v_threshold = 0.5 : f32, detach_reset = false, surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x2x3xf32>, tensor<f32>
  return %2 : tensor<4x2x3xf32>
}

// A stage function of a split pipeline: receive from the stage before, send to the one after.
// CHECK-LABEL: func.func @stage_1() attributes {snn.pp_stage = 1 : i64}
func.func @stage_1() attributes {snn.pp_stage = 1 : i64} {
  // CHECK-NEXT: %[[H:.*]] = snn.recv from stage 0 slot 0 : tensor<4x?x8xf32>
  %h = snn.recv from stage 0 slot 0 : tensor<4x?x8xf32>
  // CHECK-NEXT: snn.send %[[H]] to stage 2 slot 1 : tensor<4x?x8xf32>
  snn.send %h to stage 2 slot 1 : tensor<4x?x8xf32>
  return
}

// A spiking transformer's ops: the attention product over 4 heads and the mean over tokens.
// CHECK-LABEL: func.func @attention
// CHECK: snn.spiking_attention %{{.*}} {num_heads = 4 : i64, scale = 1.250000e-01 : f32} : (tensor<4x?x48x16xf32>) -> tensor<4x?x16x16xf32>
// CHECK: snn.reduce_mean %{{.*}} {axes = array<i64: 3>, keepdims = false} : (tensor<4x?x16x16xf32>) -> tensor<4x?x16xf32>
// CHECK: snn.reduce_mean %{{.*}} {axes = array<i64: 2, 3>, keepdims = true} : (tensor<4x?x16x16xf32>) -> tensor<4x?x1x1xf32>
func.func @attention(%qkv: tensor<4x?x48x16xf32>) -> (tensor<4x?x16xf32>, tensor<4x?x1x1xf32>) {
  %0 = snn.spiking_attention %qkv {num_heads = 4 : i64, scale = 0.125 : f32} : (tensor<4x?x48x16xf32>) -> tensor<4x?x16x16xf32>
  %1 = snn.reduce_mean %0 {axes = array<i64: 3>, keepdims = false} : (tensor<4x?x16x16xf32>) -> tensor<4x?x16xf32>
  %2 = snn.reduce_mean %0 {axes = array<i64: 2, 3>, keepdims = true} : (tensor<4x?x16x16xf32>) -> tensor<4x?x1x1xf32>
  return %1, %2 : tensor<4x?x16xf32>, tensor<4x?x1x1xf32>
}
