// RUN: snn-opt %s --snn-legalize-onnx --canonicalize --split-input-file | FileCheck %s

// Fold region with two per-step ops (SeqToANNContainer(conv, pool)) and a residual Add.
// CHECK-LABEL: func.func @fold_chain
// CHECK-SAME: (%[[X:.*]]: tensor<2x?x3x4x4xf32>) -> tensor<2x?x3x2x2xf32>
// CHECK: %[[W:.*]] = snn.parameter "w"
// CHECK: %[[C:.*]] = snn.conv2d %[[X]], %[[W]] {{.*}}groups = 3 : i64{{.*}} -> tensor<2x?x3x4x4xf32>
// CHECK: %[[P:.*]] = snn.avg_pool2d %[[C]] {ceil_mode = false, count_include_pad = true, kernel_size = array<i64: 2, 2>, padding = array<i64: 0, 0>, stride = array<i64: 2, 2>}
// CHECK: %[[S:.*]] = snn.if_node %[[P]]
// CHECK: %[[A:.*]] = snn.add %[[S]], %[[P]]
// CHECK: return %[[A]]
func.func @fold_chain(%x: tensor<2x?x3x4x4xf32>) -> tensor<*xf32> {
  %w = snn.parameter "w" = dense<1.0> : tensor<3x1x1x1xf32>
  %s = arith.constant dense<[-1, 3, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 3, 2, 2]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x3x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  %1 = snn.onnx_node "Conv"(%0, %w) domain "" attrs {group = 3 : i64, kernel_shape = array<i64: 1, 1>} : (tensor<*xf32>, tensor<3x1x1x1xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "AveragePool"(%1) domain "" attrs {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, count_include_pad = 1 : i64} : (tensor<*xf32>) -> tensor<*xf32>
  %3 = snn.onnx_node "Reshape"(%2, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  %4 = snn.onnx_node "IFNode"(%3) domain "spikemesh" attrs {v_threshold = 1.0 : f32, v_reset = 0.0 : f32} : (tensor<*xf32>) -> tensor<*xf32>
  %5 = snn.onnx_node "Add"(%4, %3) domain "" attrs {} : (tensor<*xf32>, tensor<*xf32>) -> tensor<*xf32>
  return %5 : tensor<*xf32>
}

// -----

// Neuron defaults follow SpikingJelly: threshold 1, surrogate sigmoid(alpha 4), decay_input;
// a missing v_reset is a soft reset.
// CHECK-LABEL: func.func @neuron_defaults
// CHECK: snn.plif_node %{{.*}}, %{{.*}} {alpha = 4.000000e+00 : f32, decay_input = true, detach_reset = false, surrogate = #snn<surrogate sigmoid>, v_threshold = 1.000000e+00 : f32}
// CHECK: snn.lif_node %{{.*}} {alpha = 2.000000e+00 : f32, decay_input = true, detach_reset = false, surrogate = #snn<surrogate atan>, tau = 2.000000e+00 : f32, v_reset = -1.000000e-01 : f32, v_threshold = 5.000000e-01 : f32}
// CHECK: snn.mul
// CHECK: snn.mean_time
func.func @neuron_defaults(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  %w = snn.parameter "sn.w" = dense<0.0> : tensor<f32>
  %0 = snn.onnx_node "ParametricLIFNode"(%x, %w) domain "spikemesh" attrs {} : (tensor<4x2x3xf32>, tensor<f32>) -> tensor<*xf32>
  %1 = snn.onnx_node "LIFNode"(%0) domain "spikemesh" attrs {surrogate = "atan", v_threshold = 0.5 : f32, v_reset = -0.1 : f32} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Mul"(%1, %0) domain "" attrs {} : (tensor<*xf32>, tensor<*xf32>) -> tensor<*xf32>
  %3 = snn.onnx_node "ReduceMean"(%2) domain "" attrs {axes = array<i64: 0>, keepdims = 0 : i64} : (tensor<*xf32>) -> tensor<*xf32>
  return %3 : tensor<*xf32>
}

// -----

// Every surrogate by name, with its parameters' defaults (SpikingJelly's): alpha for the first,
// beta for the second where the surrogate has one.
// CHECK-LABEL: func.func @surrogates
// CHECK: snn.if_node %{{.*}} {alpha = 1.000000e+00 : f32, detach_reset = false, surrogate = #snn<surrogate piecewise_quadratic>
// CHECK: snn.if_node %{{.*}} {alpha = 2.000000e+00 : f32, detach_reset = false, surrogate = #snn<surrogate erf>
// CHECK: snn.if_node %{{.*}} {alpha = 1.000000e+00 : f32, beta = 0.00999999977 : f32, detach_reset = false, surrogate = #snn<surrogate piecewise_leaky_relu>
// CHECK: snn.if_node %{{.*}} {alpha = 2.000000e+00 : f32, beta = 8.000000e+00 : f32, detach_reset = false, surrogate = #snn<surrogate squarewave_fourier_series>
// CHECK: snn.lif_node %{{.*}} {alpha = 3.000000e+00 : f32, beta = 5.000000e-01 : f32, decay_input = true, detach_reset = false, surrogate = #snn<surrogate s2nn>
// CHECK: snn.if_node %{{.*}} {alpha = 0.000000e+00 : f32, beta = 1.000000e+00 : f32, detach_reset = false, surrogate = #snn<surrogate leaky_k_relu>
// CHECK: snn.if_node %{{.*}} {alpha = 3.000000e-01 : f32, detach_reset = false, surrogate = #snn<surrogate fake_numerical_gradient>
func.func @surrogates(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  %0 = snn.onnx_node "IFNode"(%x) domain "spikemesh" attrs {surrogate = "piecewise_quadratic"} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  %1 = snn.onnx_node "IFNode"(%0) domain "spikemesh" attrs {surrogate = "erf"} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "IFNode"(%1) domain "spikemesh" attrs {surrogate = "piecewise_leaky_relu"} : (tensor<*xf32>) -> tensor<*xf32>
  %3 = snn.onnx_node "IFNode"(%2) domain "spikemesh" attrs {surrogate = "squarewave_fourier_series"} : (tensor<*xf32>) -> tensor<*xf32>
  %4 = snn.onnx_node "LIFNode"(%3) domain "spikemesh" attrs {surrogate = "s2nn", alpha = 3.0 : f32, beta = 0.5 : f32} : (tensor<*xf32>) -> tensor<*xf32>
  %5 = snn.onnx_node "IFNode"(%4) domain "spikemesh" attrs {surrogate = "leaky_k_relu"} : (tensor<*xf32>) -> tensor<*xf32>
  %6 = snn.onnx_node "IFNode"(%5) domain "spikemesh" attrs {surrogate = "fake_numerical_gradient"} : (tensor<*xf32>) -> tensor<*xf32>
  return %6 : tensor<*xf32>
}

// -----

// MLIR's `true` (an i1) is the flag 1, not -1.
// CHECK-LABEL: func.func @i1_flag
// CHECK: snn.if_node %{{.*}} {{{.*}}detach_reset = true
func.func @i1_flag(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  %0 = snn.onnx_node "IFNode"(%x) domain "spikemesh" attrs {detach_reset = true} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}
