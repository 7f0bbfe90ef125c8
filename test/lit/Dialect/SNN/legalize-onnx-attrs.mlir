// RUN: snn-opt %s --snn-legalize-onnx --split-input-file -verify-diagnostics

// Wrong-typed attributes, bad values and wrong input counts: each is an error naming the
// node, never a default or an abort.

// An INT where ONNX's schema has a FLOAT is an error; tau = -1 (INT) used to compile as the
// default 2.0, bypassing the tau > 1 check.
func.func @tau_int_negative(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(LIFNode): attribute 'tau' must be a float, got an integer}}
  %0 = snn.onnx_node "LIFNode"(%x) domain "spikemesh" attrs {tau = -1 : i64} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @float_as_string(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(IFNode): attribute 'v_threshold' must be a float, got a string}}
  %0 = snn.onnx_node "IFNode"(%x) domain "spikemesh" attrs {v_threshold = "0.5"} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @float_as_list(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(IFNode): attribute 'v_reset' must be a float, got a list of integers}}
  %0 = snn.onnx_node "IFNode"(%x) domain "spikemesh" attrs {v_reset = array<i64: 0>} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

// A float is never taken for an integer.
func.func @int_as_float(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(IFNode): attribute 'detach_reset' must be an integer, got a float}}
  %0 = snn.onnx_node "IFNode"(%x) domain "spikemesh" attrs {detach_reset = 1.0 : f32} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @string_as_int(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(IFNode): attribute 'surrogate' must be a string, got an integer}}
  %0 = snn.onnx_node "IFNode"(%x) domain "spikemesh" attrs {surrogate = 1 : i64} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

// One diagnostic per wrong attribute of a node.
func.func @several_wrong(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+3 {{(LIFNode): attribute 'tau' must be a float, got a string}}
  // expected-error @+2 {{(LIFNode): attribute 'alpha' must be a float, got a string}}
  // expected-error @+1 {{(LIFNode): attribute 'decay_input' must be an integer, got a string}}
  %0 = snn.onnx_node "LIFNode"(%x) domain "spikemesh" attrs {tau = "2", alpha = "4", decay_input = "1"} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @init_tau_type(%x: tensor<4x2x3xf32>, %w: tensor<f32>) -> tensor<*xf32> {
  // expected-error @+1 {{(ParametricLIFNode): attribute 'init_tau' must be a float, got a string}}
  %0 = snn.onnx_node "ParametricLIFNode"(%x, %w) domain "spikemesh" attrs {init_tau = "2"} : (tensor<4x2x3xf32>, tensor<f32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

// String pads used to become zero padding.
func.func @ints_as_string(%x: tensor<2x?x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Conv): attribute 'pads' must be a list of integers, got a string}}
  %1 = snn.onnx_node "Conv"(%0, %w) domain "" attrs {pads = "1 1 1 1"} : (tensor<*xf32>, tensor<1x1x3x3xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @ints_as_int(%x: tensor<2x?x1x4x4xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(MaxPool): attribute 'strides' must be a list of integers, got an integer}}
  %1 = snn.onnx_node "MaxPool"(%0) domain "" attrs {kernel_shape = array<i64: 2, 2>, strides = 2 : i64} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @int_as_string(%x: tensor<2x?x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Conv): attribute 'group' must be an integer, got a string}}
  %1 = snn.onnx_node "Conv"(%0, %w) domain "" attrs {group = "1"} : (tensor<*xf32>, tensor<1x1x3x3xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @gemm_trans_float(%x: tensor<4x?x6xf32>, %w: tensor<3x6xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 6]> : tensor<2xi64>
  %u = arith.constant dense<[4, -1, 3]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6xf32>, tensor<2xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Gemm): attribute 'transB' must be an integer, got a float}}
  %1 = snn.onnx_node "Gemm"(%0, %w) domain "" attrs {transB = 1.0 : f32} : (tensor<*xf32>, tensor<3x6xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @epsilon_string(%x: tensor<2x?x1x4x4xf32>, %p: tensor<1xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(BatchNormalization): attribute 'epsilon' must be a float, got a string}}
  %1 = snn.onnx_node "BatchNormalization"(%0, %p, %p, %p, %p) domain "" attrs {epsilon = "1e-5"} : (tensor<*xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @flatten_axis_string(%x: tensor<2x?x1x4x4xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Flatten): attribute 'axis' must be an integer, got a string}}
  %1 = snn.onnx_node "Flatten"(%0) domain "" attrs {axis = "1"} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @auto_pad_int(%x: tensor<2x?x1x4x4xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(AveragePool): attribute 'auto_pad' must be a string, got an integer}}
  %1 = snn.onnx_node "AveragePool"(%0) domain "" attrs {kernel_shape = array<i64: 2, 2>, auto_pad = 0 : i64} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @ceil_mode_float(%x: tensor<2x?x1x4x4xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(MaxPool): attribute 'ceil_mode' must be an integer, got a float}}
  %1 = snn.onnx_node "MaxPool"(%0) domain "" attrs {kernel_shape = array<i64: 2, 2>, ceil_mode = 0.0 : f32} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @flag_value(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(LIFNode): attribute 'decay_input' must be 0 or 1, got 2}}
  %0 = snn.onnx_node "LIFNode"(%x) domain "spikemesh" attrs {decay_input = 2 : i64} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

// Used to pass legalization and fail snn.if_node's verifier without naming the node.
func.func @alpha_zero(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(IFNode): sigmoid surrogate: alpha (alpha) must be a finite number > 0, got 0}}
  %0 = snn.onnx_node "IFNode"(%x) domain "spikemesh" attrs {alpha = 0.0 : f32} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @alpha_nan(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(IFNode): sigmoid surrogate: alpha (alpha) must be a finite number > 0, got nan}}
  %0 = snn.onnx_node "IFNode"(%x) domain "spikemesh" attrs {alpha = 0x7FC00000 : f32} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @threshold_inf(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(IFNode): attribute 'v_threshold' must be finite, got inf}}
  %0 = snn.onnx_node "IFNode"(%x) domain "spikemesh" attrs {v_threshold = 0x7F800000 : f32} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @reset_nan(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(IFNode): attribute 'v_reset' must be finite, got nan}}
  %0 = snn.onnx_node "IFNode"(%x) domain "spikemesh" attrs {v_reset = 0x7FC00000 : f32} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

// inf > 1 passed the old check.
func.func @tau_inf(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(LIFNode): tau must be finite and > 1, got inf}}
  %0 = snn.onnx_node "LIFNode"(%x) domain "spikemesh" attrs {tau = 0x7F800000 : f32} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @neuron_input_int(%x: tensor<4x2x3xi64>) -> tensor<*xf32> {
  // expected-error @+1 {{(IFNode): input must be a time-major [T, N, ...] f32 tensor, got tensor<4x2x3xi64>}}
  %0 = snn.onnx_node "IFNode"(%x) domain "spikemesh" attrs {} : (tensor<4x2x3xi64>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @plif_w_f64(%x: tensor<4x2x3xf32>, %w: tensor<f64>) -> tensor<*xf32> {
  // expected-error @+1 {{(ParametricLIFNode): w (input #1) must be a float32 scalar, got tensor<f64>}}
  %0 = snn.onnx_node "ParametricLIFNode"(%x, %w) domain "spikemesh" attrs {} : (tensor<4x2x3xf32>, tensor<f64>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @conv_strides_negative(%x: tensor<2x?x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Conv): attribute 'strides' must be 2 positive integers, got [-1, 1]}}
  %1 = snn.onnx_node "Conv"(%0, %w) domain "" attrs {strides = array<i64: -1, 1>} : (tensor<*xf32>, tensor<1x1x3x3xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @conv_pads_negative(%x: tensor<2x?x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Conv): attribute 'pads' must be 4 non-negative integers, got [-1, -1, -1, -1]}}
  %1 = snn.onnx_node "Conv"(%0, %w) domain "" attrs {pads = array<i64: -1, -1, -1, -1>} : (tensor<*xf32>, tensor<1x1x3x3xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @conv_dilations_3d(%x: tensor<2x?x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Conv): attribute 'dilations' must be 2 positive integers, got [1, 1, 1]}}
  %1 = snn.onnx_node "Conv"(%0, %w) domain "" attrs {dilations = array<i64: 1, 1, 1>} : (tensor<*xf32>, tensor<1x1x3x3xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @conv_group_zero(%x: tensor<2x?x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Conv): attribute 'group' must be positive, got 0}}
  %1 = snn.onnx_node "Conv"(%0, %w) domain "" attrs {group = 0 : i64} : (tensor<*xf32>, tensor<1x1x3x3xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

// kernel_shape used to be ignored.
func.func @conv_kernel_shape(%x: tensor<2x?x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Conv): kernel_shape [2, 2] does not match the weight's spatial dims [3, 3]}}
  %1 = snn.onnx_node "Conv"(%0, %w) domain "" attrs {kernel_shape = array<i64: 2, 2>} : (tensor<*xf32>, tensor<1x1x3x3xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @max_pool_dilation_zero(%x: tensor<2x?x1x4x4xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(MaxPool): attribute 'dilations' must be 2 positive integers, got [0, 1]}}
  %1 = snn.onnx_node "MaxPool"(%0) domain "" attrs {kernel_shape = array<i64: 2, 2>, dilations = array<i64: 0, 1>} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @avg_pool_kernel_zero(%x: tensor<2x?x1x4x4xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(AveragePool): attribute 'kernel_shape' must be 2 positive integers, got [0, 2]}}
  %1 = snn.onnx_node "AveragePool"(%0) domain "" attrs {kernel_shape = array<i64: 0, 2>} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @avg_pool_kernel_empty(%x: tensor<2x?x1x4x4xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(AveragePool): attribute 'kernel_shape' must be 2 positive integers, got []}}
  %1 = snn.onnx_node "AveragePool"(%0) domain "" attrs {kernel_shape = array<i64>} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

// Used to be ignored (an undilated pool).
func.func @avg_pool_dilations(%x: tensor<2x?x1x4x4xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(AveragePool): AveragePool with dilations other than 1 is not supported}}
  %1 = snn.onnx_node "AveragePool"(%0) domain "" attrs {kernel_shape = array<i64: 2, 2>, dilations = array<i64: 2, 2>} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @epsilon_negative(%x: tensor<2x?x1x4x4xf32>, %p: tensor<1xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(BatchNormalization): attribute 'epsilon' must be finite and > 0, got -1}}
  %1 = snn.onnx_node "BatchNormalization"(%0, %p, %p, %p, %p) domain "" attrs {epsilon = -1.0 : f32} : (tensor<*xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @epsilon_nan(%x: tensor<2x?x1x4x4xf32>, %p: tensor<1xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(BatchNormalization): attribute 'epsilon' must be finite and > 0, got nan}}
  %1 = snn.onnx_node "BatchNormalization"(%0, %p, %p, %p, %p) domain "" attrs {epsilon = 0x7FC00000 : f32} : (tensor<*xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @momentum_range(%x: tensor<2x?x1x4x4xf32>, %p: tensor<1xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(BatchNormalization): attribute 'momentum' must be in [0, 1], got 2}}
  %1 = snn.onnx_node "BatchNormalization"(%0, %p, %p, %p, %p) domain "" attrs {momentum = 2.0 : f32} : (tensor<*xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

// The second input used to be dropped silently.
func.func @if_two_inputs(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(IFNode): expects 1 input(s) (x), got 2}}
  %0 = snn.onnx_node "IFNode"(%x, %x) domain "spikemesh" attrs {} : (tensor<4x2x3xf32>, tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @lif_no_input(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(LIFNode): expects 1 input(s) (x), got 0}}
  %0 = snn.onnx_node "LIFNode"() domain "spikemesh" attrs {} : () -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @max_pool_two_inputs(%x: tensor<2x?x1x4x4xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(MaxPool): expects 1 input(s) (X), got 2}}
  %1 = snn.onnx_node "MaxPool"(%0, %x) domain "" attrs {kernel_shape = array<i64: 2, 2>} : (tensor<*xf32>, tensor<2x?x1x4x4xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @conv_one_input(%x: tensor<2x?x1x4x4xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Conv): expects 2 or 3 input(s) (X, W[, B]), got 1}}
  %1 = snn.onnx_node "Conv"(%0) domain "" attrs {} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @batch_norm_four_inputs(%x: tensor<2x?x1x4x4xf32>, %p: tensor<1xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(BatchNormalization): expects 5 input(s) (X, scale, B, mean, var), got 4}}
  %1 = snn.onnx_node "BatchNormalization"(%0, %p, %p, %p) domain "" attrs {} : (tensor<*xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @dropout_three_inputs(%x: tensor<2x?x1x4x4xf32>, %r: tensor<f32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Dropout): expects 1 or 2 input(s) (data[, ratio]), got 3}}
  %1 = snn.onnx_node "Dropout"(%0, %r, %r) domain "" attrs {} : (tensor<*xf32>, tensor<f32>, tensor<f32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

// Reported by the leftover check: it used to say "not part of a ... fold".
func.func @reshape_one_input(%x: tensor<4x2x6xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(Reshape): expects 2 input(s) (data, shape), got 1}}
  %0 = snn.onnx_node "Reshape"(%x) domain "" attrs {} : (tensor<4x2x6xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @add_three_inputs(%x: tensor<4x2x6xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(Add): expects 2 input(s) (A, B), got 3}}
  %0 = snn.onnx_node "Add"(%x, %x, %x) domain "" attrs {} : (tensor<4x2x6xf32>, tensor<4x2x6xf32>, tensor<4x2x6xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @mul_types(%x: tensor<4x2x6xf32>, %y: tensor<4x2x5xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(Mul): operands must be time-major tensors of one type, got tensor<4x2x6xf32> and tensor<4x2x5xf32>}}
  %0 = snn.onnx_node "Mul"(%x, %y) domain "" attrs {} : (tensor<4x2x6xf32>, tensor<4x2x5xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @reduce_mean_axes_string(%x: tensor<4x2x6xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(ReduceMean): attribute 'axes' must be a list of integers, got a string}}
  %0 = snn.onnx_node "ReduceMean"(%x) domain "" attrs {axes = "0", keepdims = 0 : i64} : (tensor<4x2x6xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @reduce_mean_axes(%x: tensor<4x2x6xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(ReduceMean): ReduceMean is supported as the readout over T (axes=[0], keepdims=0) or over ascending per-step dims (every axis >= 2), got axes [1]}}
  %0 = snn.onnx_node "ReduceMean"(%x) domain "" attrs {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<4x2x6xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}
