// RUN: snn-opt %s --snn-legalize-onnx --canonicalize --split-input-file -verify-diagnostics | FileCheck %s

// A Spikformer attention block as snnexport writes it: the qkv Conv1d + BatchNorm1d in the
// [C, 1, L] view ATen computes conv1d in, the view back to [3C, L], the qkv LIF, the
// attention product, the attention LIF; then the mean over tokens.
// CHECK-LABEL: func.func @attention_block
// CHECK-SAME: (%[[X:.*]]: tensor<4x?x8x16xf32>) -> tensor<4x?x8xf32>
// CHECK: %[[V:.*]] = snn.reshape %[[X]] {shape = array<i64: 8, 1, 16>} : (tensor<4x?x8x16xf32>) -> tensor<4x?x8x1x16xf32>
// CHECK: %[[C:.*]] = snn.conv2d %[[V]], %{{.*}} {{.*}} -> tensor<4x?x24x1x16xf32>
// CHECK: %[[B:.*]] = snn.batch_norm %[[C]]
// CHECK: %[[U:.*]] = snn.reshape %[[B]] {shape = array<i64: 24, 16>} : (tensor<4x?x24x1x16xf32>) -> tensor<4x?x24x16xf32>
// CHECK: %[[Q:.*]] = snn.lif_node %[[U]]
// CHECK: %[[A:.*]] = snn.spiking_attention %[[Q]] {num_heads = 2 : i64, scale = 1.250000e-01 : f32} : (tensor<4x?x24x16xf32>) -> tensor<4x?x8x16xf32>
// CHECK: %[[S:.*]] = snn.lif_node %[[A]] {{.*}}v_threshold = 5.000000e-01
// CHECK: %[[M:.*]] = snn.reduce_mean %[[S]] {axes = array<i64: 3>, keepdims = false} : (tensor<4x?x8x16xf32>) -> tensor<4x?x8xf32>
// CHECK: return %[[M]]
func.func @attention_block(%x: tensor<4x?x8x16xf32>) -> tensor<*xf32> {
  %w = snn.parameter "attn.qkv_conv_bn.0.weight" = dense<0.5> : tensor<24x8x1x1xf32>
  %g = snn.parameter "attn.qkv_conv_bn.1.weight" = dense<1.0> : tensor<24xf32>
  %b = snn.parameter "attn.qkv_conv_bn.1.bias" = dense<0.0> : tensor<24xf32>
  %m = snn.parameter "attn.qkv_conv_bn.1.running_mean" buffer = dense<0.0> : tensor<24xf32>
  %v = snn.parameter "attn.qkv_conv_bn.1.running_var" buffer = dense<1.0> : tensor<24xf32>
  %f = arith.constant dense<[-1, 8, 1, 16]> : tensor<4xi64>
  %u = arith.constant dense<[4, -1, 24, 1, 16]> : tensor<5xi64>
  %f2 = arith.constant dense<[-1, 24, 16]> : tensor<3xi64>
  %u2 = arith.constant dense<[4, -1, 24, 16]> : tensor<4xi64>
  %0 = snn.onnx_node "Reshape"(%x, %f) domain "" attrs {} : (tensor<4x?x8x16xf32>, tensor<4xi64>) -> tensor<*xf32>
  %1 = snn.onnx_node "Conv"(%0, %w) domain "" attrs {kernel_shape = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<*xf32>, tensor<24x8x1x1xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "BatchNormalization"(%1, %g, %b, %m, %v) domain "" attrs {epsilon = 1.0e-5 : f32, momentum = 0.9 : f32} : (tensor<*xf32>, tensor<24xf32>, tensor<24xf32>, tensor<24xf32>, tensor<24xf32>) -> tensor<*xf32>
  %3 = snn.onnx_node "Reshape"(%2, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  %4 = snn.onnx_node "Reshape"(%3, %f2) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  %5 = snn.onnx_node "Reshape"(%4, %u2) domain "" attrs {} : (tensor<*xf32>, tensor<4xi64>) -> tensor<*xf32>
  %6 = snn.onnx_node "LIFNode"(%5) domain "spikemesh" attrs {tau = 2.0 : f32, v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = 1 : i64} : (tensor<*xf32>) -> tensor<*xf32>
  %7 = snn.onnx_node "SpikingAttention"(%6) domain "spikemesh" attrs {num_heads = 2 : i64, scale = 0.125 : f32} : (tensor<*xf32>) -> tensor<*xf32>
  %8 = snn.onnx_node "LIFNode"(%7) domain "spikemesh" attrs {tau = 2.0 : f32, v_threshold = 0.5 : f32, v_reset = 0.0 : f32, detach_reset = 1 : i64} : (tensor<*xf32>) -> tensor<*xf32>
  %9 = snn.onnx_node "ReduceMean"(%8) domain "" attrs {axes = array<i64: 3>, keepdims = 0 : i64} : (tensor<*xf32>) -> tensor<*xf32>
  return %9 : tensor<*xf32>
}

// -----

func.func @heads_do_not_divide(%x: tensor<4x2x24x16xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{ONNX node '<unnamed>' (SpikingAttention): snn.spiking_attention: spiking_attention input channels of tensor<4x2x24x16xf32> must be a static multiple of 3 * num_heads = 9 (q, k, v of whole heads)}}
  %0 = snn.onnx_node "SpikingAttention"(%x) domain "spikemesh" attrs {num_heads = 3 : i64, scale = 0.125 : f32} : (tensor<4x2x24x16xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @no_heads(%x: tensor<4x2x24x16xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{ONNX node '<unnamed>' (SpikingAttention): attribute 'num_heads' must be given and >= 1, got 0}}
  %0 = snn.onnx_node "SpikingAttention"(%x) domain "spikemesh" attrs {scale = 0.125 : f32} : (tensor<4x2x24x16xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @scale_not_finite(%x: tensor<4x2x24x16xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(SpikingAttention): attribute 'scale' must be given and finite, got inf}}
  %0 = snn.onnx_node "SpikingAttention"(%x) domain "spikemesh" attrs {num_heads = 2 : i64, scale = 0x7F800000 : f32} : (tensor<4x2x24x16xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @heads_as_float(%x: tensor<4x2x24x16xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(SpikingAttention): attribute 'num_heads' must be an integer, got a float}}
  %0 = snn.onnx_node "SpikingAttention"(%x) domain "spikemesh" attrs {num_heads = 2.0 : f32, scale = 0.125 : f32} : (tensor<4x2x24x16xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @attention_rank(%x: tensor<4x2x24x4x4xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(SpikingAttention): snn.spiking_attention: spiking_attention input must have rank 4 ([T, N, 3*C, L]), got 5}}
  %0 = snn.onnx_node "SpikingAttention"(%x) domain "spikemesh" attrs {num_heads = 2 : i64, scale = 0.125 : f32} : (tensor<4x2x24x4x4xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @mean_over_time_and_tokens(%x: tensor<4x2x8x16xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(ReduceMean): ReduceMean is supported as the readout over T (axes=[0], keepdims=0) or over ascending per-step dims (every axis >= 2), got axes [0, 3]}}
  %0 = snn.onnx_node "ReduceMean"(%x) domain "" attrs {axes = array<i64: 0, 3>, keepdims = 0 : i64} : (tensor<4x2x8x16xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @mean_axis_out_of_range(%x: tensor<4x2x8x16xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(ReduceMean): snn.reduce_mean: reduce_mean axis 4 must be a per-step dim of tensor<4x2x8x16xf32> (2 to 3)}}
  %0 = snn.onnx_node "ReduceMean"(%x) domain "" attrs {axes = array<i64: 4>, keepdims = 0 : i64} : (tensor<4x2x8x16xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}
