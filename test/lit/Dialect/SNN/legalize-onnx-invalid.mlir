// RUN: snn-opt %s --snn-legalize-onnx --split-input-file -verify-diagnostics

func.func @unsupported(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{ONNX node '<unnamed>' (Softmax): unsupported ONNX op}}
  %0 = snn.onnx_node "Softmax"(%x) domain "" attrs {} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @unknown_domain(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(Izhikevich): unsupported op of domain 'spikemesh'}}
  %0 = snn.onnx_node "Izhikevich"(%x) domain "spikemesh" attrs {} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @tau(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(LIFNode): tau must be finite and > 1, got 1}}
  %0 = snn.onnx_node "LIFNode"(%x) domain "spikemesh" attrs {tau = 1.0 : f32} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @plif_w(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(ParametricLIFNode): expects 2 input(s) (x, w), got 1}}
  %0 = snn.onnx_node "ParametricLIFNode"(%x) domain "spikemesh" attrs {} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @surrogate(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(IFNode): unknown surrogate 'gauss' (expected one of sigmoid, atan, piecewise_quadratic, piecewise_exp, soft_sign, super_spike, nonzero_sign_log_abs, erf, piecewise_leaky_relu, squarewave_fourier_series, s2nn, q_pseudo_spike, leaky_k_relu, fake_numerical_gradient, log_tailed_relu, rect)}}
  %0 = snn.onnx_node "IFNode"(%x) domain "spikemesh" attrs {surrogate = "gauss"} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @surrogate_beta(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(IFNode): attribute 'beta': the erf surrogate takes no beta}}
  %0 = snn.onnx_node "IFNode"(%x) domain "spikemesh" attrs {surrogate = "erf", beta = 1.0 : f32} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @surrogate_parameter(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(LIFNode): squarewave_fourier_series surrogate: alpha (n) must be a whole number >= 1, got 2.5}}
  %0 = snn.onnx_node "LIFNode"(%x) domain "spikemesh" attrs {surrogate = "squarewave_fourier_series", alpha = 2.5 : f32} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @surrogate_second_parameter(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(IFNode): squarewave_fourier_series surrogate: beta (T_period) must be a finite number > 0, got 0}}
  %0 = snn.onnx_node "IFNode"(%x) domain "spikemesh" attrs {surrogate = "squarewave_fourier_series", beta = 0.0 : f32} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @fold_mismatch(%x: tensor<4x?x6xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 6]> : tensor<2xi64>
  %u = arith.constant dense<[3, -1, 6]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6xf32>, tensor<2xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Reshape): unfold shape [3, -1, 6] must be [T, -1, ...] with T = 4, the time steps of the fold's input tensor<4x?x6xf32>}}
  %1 = snn.onnx_node "Reshape"(%0, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %1 : tensor<*xf32>
}

// -----

func.func @step_outside_fold(%x: tensor<4x2x6xf32>, %w: tensor<3x6xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(Gemm): per-step layer outside a [T*N, ...] fold region}}
  %0 = snn.onnx_node "Gemm"(%x, %w) domain "" attrs {transB = 1 : i64} : (tensor<4x2x6xf32>, tensor<3x6xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @gemm_trans(%x: tensor<4x?x6xf32>, %w: tensor<6x3xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 6]> : tensor<2xi64>
  %u = arith.constant dense<[4, -1, 3]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6xf32>, tensor<2xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Gemm): only Gemm with transB=1, transA=0, alpha=beta=1 (Linear)}}
  %1 = snn.onnx_node "Gemm"(%0, %w) domain "" attrs {} : (tensor<*xf32>, tensor<6x3xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

// A ratio of 1 is refused on the node; it used to abort in snn.dropout's builder.
func.func @dropout_ratio_one(%x: tensor<4x?x6xf32>) -> tensor<*xf32> {
  %r = snn.parameter "drop.ratio" = dense<1.0> : tensor<f32>
  %s = arith.constant dense<[-1, 6]> : tensor<2xi64>
  %u = arith.constant dense<[4, -1, 6]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6xf32>, tensor<2xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Dropout): Dropout ratio must be in [0, 1), got 1}}
  %1 = snn.onnx_node "Dropout"(%0, %r) domain "" attrs {} : (tensor<*xf32>, tensor<f32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @gemm_alpha(%x: tensor<4x?x6xf32>, %w: tensor<3x6xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 6]> : tensor<2xi64>
  %u = arith.constant dense<[4, -1, 3]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6xf32>, tensor<2xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Gemm): only Gemm with transB=1, transA=0, alpha=beta=1 (Linear)}}
  %1 = snn.onnx_node "Gemm"(%0, %w) domain "" attrs {transB = 1 : i64, alpha = 0.5 : f32} : (tensor<*xf32>, tensor<3x6xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

// snn.linear's shape check, reported on the node instead of aborting in the builder.
func.func @gemm_features(%x: tensor<4x?x6xf32>, %w: tensor<3x5xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 6]> : tensor<2xi64>
  %u = arith.constant dense<[4, -1, 3]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6xf32>, tensor<2xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Gemm): snn.linear: linear input has 6 features but weight expects 5}}
  %1 = snn.onnx_node "Gemm"(%0, %w) domain "" attrs {transB = 1 : i64} : (tensor<*xf32>, tensor<3x5xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

// A weight of unknown shape has no ranked type to build snn.linear with.
func.func @gemm_unranked_weight(%x: tensor<4x?x6xf32>, %t: tensor<*xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 6]> : tensor<2xi64>
  %u = arith.constant dense<[4, -1, 3]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6xf32>, tensor<2xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Gemm): snn.linear operand #1 must be a ranked f32 tensor, got tensor<*xf32>}}
  %1 = snn.onnx_node "Gemm"(%0, %t) domain "" attrs {transB = 1 : i64} : (tensor<*xf32>, tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @batch_norm_training(%x: tensor<4x?x2x3xf32>, %p: tensor<2xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 2, 3]> : tensor<3xi64>
  %u = arith.constant dense<[4, -1, 2, 3]> : tensor<4xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x2x3xf32>, tensor<3xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(BatchNormalization): training_mode=1 is not supported (inference form only)}}
  %1 = snn.onnx_node "BatchNormalization"(%0, %p, %p, %p, %p) domain "" attrs {training_mode = 1 : i64} : (tensor<*xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<4xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @batch_norm_channels(%x: tensor<4x?x2x3xf32>, %p: tensor<3xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 2, 3]> : tensor<3xi64>
  %u = arith.constant dense<[4, -1, 2, 3]> : tensor<4xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x2x3xf32>, tensor<3xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(BatchNormalization): snn.batch_norm: batch_norm weight must be a 1-D tensor of 2 elements}}
  %1 = snn.onnx_node "BatchNormalization"(%0, %p, %p, %p, %p) domain "" attrs {} : (tensor<*xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<4xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @max_pool_asymmetric(%x: tensor<2x?x1x4x4xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(MaxPool): only symmetric 2-D padding is supported}}
  %1 = snn.onnx_node "MaxPool"(%0) domain "" attrs {kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @max_pool_storage_order(%x: tensor<2x?x1x4x4xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 2, 2]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(MaxPool): storage_order=1 is not supported}}
  %1 = snn.onnx_node "MaxPool"(%0) domain "" attrs {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, storage_order = 1 : i64} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @max_pool_no_kernel(%x: tensor<2x?x1x4x4xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(MaxPool): missing required attribute 'kernel_shape'}}
  %1 = snn.onnx_node "MaxPool"(%0) domain "" attrs {} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @avg_pool_auto_pad(%x: tensor<2x?x1x4x4xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(AveragePool): auto_pad 'SAME_UPPER' is not supported}}
  %1 = snn.onnx_node "AveragePool"(%0) domain "" attrs {auto_pad = "SAME_UPPER", kernel_shape = array<i64: 3, 3>} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @avg_pool_window(%x: tensor<2x?x1x4x4xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 1, 1]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(AveragePool): snn.avg_pool2d: window (kernel 5, stride 1, padding 0, dilation 1) does not fit spatial dim of size 4}}
  %1 = snn.onnx_node "AveragePool"(%0) domain "" attrs {kernel_shape = array<i64: 5, 5>} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

// A [T, N, C] tensor has no spatial dims to pool.
func.func @global_avg_pool_rank(%x: tensor<4x?x6xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 6]> : tensor<2xi64>
  %u = arith.constant dense<[4, -1, 6]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6xf32>, tensor<2xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(GlobalAveragePool): snn.adaptive_avg_pool2d: adaptive_avg_pool2d input must have rank 5 ([T, N, C, H, W]), got 3}}
  %1 = snn.onnx_node "GlobalAveragePool"(%0) domain "" attrs {} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @flatten_axis(%x: tensor<4x?x2x3xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 2, 3]> : tensor<3xi64>
  %u = arith.constant dense<[4, -1, 6]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x2x3xf32>, tensor<3xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Flatten): only Flatten(axis=1) of a folded tensor is supported}}
  %1 = snn.onnx_node "Flatten"(%0) domain "" attrs {axis = 2 : i64} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @dropout_ratio_input(%x: tensor<4x?x6xf32>, %r: tensor<f32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 6]> : tensor<2xi64>
  %u = arith.constant dense<[4, -1, 6]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6xf32>, tensor<2xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Dropout): Dropout ratio must be a constant float32 scalar}}
  %1 = snn.onnx_node "Dropout"(%0, %r) domain "" attrs {} : (tensor<*xf32>, tensor<f32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

// Flatten gives 8 features per step; the unfold claims 6.
func.func @unfold_shape(%x: tensor<4x?x2x4xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 2, 4]> : tensor<3xi64>
  %u = arith.constant dense<[4, -1, 6]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x2x4xf32>, tensor<3xi64>) -> tensor<*xf32>
  %1 = snn.onnx_node "Flatten"(%0) domain "" attrs {} : (tensor<*xf32>) -> tensor<*xf32>
  // expected-error @+1 {{(Reshape): unfold shape does not match the per-step result shape}}
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

// GroupNorm's groups must divide the channels.
func.func @group_norm_groups(%x: tensor<4x?x6x2x2xf32>) -> tensor<*xf32> {
  %g = snn.parameter "gn.weight" = dense<1.0> : tensor<6xf32>
  %s = arith.constant dense<[-1, 6, 2, 2]> : tensor<4xi64>
  %u = arith.constant dense<[4, -1, 6, 2, 2]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6x2x2xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(GroupNorm): snn.group_norm: group_norm num_groups 4 must be positive and divide the 6 channels}}
  %1 = snn.onnx_node "GroupNorm"(%0, %g, %g) domain "spikemesh" attrs {num_groups = 4 : i64} : (tensor<*xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

// A reshaping fold must keep the number of values per step.
func.func @reshaping_fold_count(%x: tensor<4x?x8xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 3, 3]> : tensor<4xi64>
  %u = arith.constant dense<[4, -1, 9]> : tensor<3xi64>
  // expected-error @+1 {{(Reshape): fold shape [-1, 1, 3, 3] must be [-1] followed by the dims after T and N of its input tensor<4x?x8xf32>, or by static dims of as many values per step}}
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x8xf32>, tensor<4xi64>) -> tensor<*xf32>
  %1 = snn.onnx_node "Flatten"(%0) domain "" attrs {axis = 1 : i64} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

// Concatenation must keep T and N and the other per-step dims.
func.func @concat_mismatch(%a: tensor<4x?x3x5x5xf32>, %b: tensor<4x?x2x4x5xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(Concat): snn.concat: concat operands tensor<4x?x3x5x5xf32> and tensor<4x?x2x4x5xf32> differ outside axis 2}}
  %0 = snn.onnx_node "Concat"(%a, %b) domain "" attrs {axis = 2 : i64} : (tensor<4x?x3x5x5xf32>, tensor<4x?x2x4x5xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

// A described neuron whose charge reads a name it does not declare.
func.func @neuron_unknown_name(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(Neuron): neuron charge statement 1 'h = v + q': unknown name 'q'}}
  %0 = snn.onnx_node "Neuron"(%x) domain "spikemesh" attrs {states = ["v=0"], constants = ["v_threshold=1"], charge = ["h = v + q"], fire = "h - v_threshold", reset = "soft"} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @neuron_operand_count(%x: tensor<4x2x3xf32>, %k: tensor<f32>) -> tensor<*xf32> {
  // expected-error @+1 {{(Neuron): 0 operand names for 1 operand inputs}}
  %0 = snn.onnx_node "Neuron"(%x, %k) domain "spikemesh" attrs {states = ["v=0"], constants = ["v_threshold=1"], charge = ["h = v + x"], fire = "h - v_threshold", reset = "soft"} : (tensor<4x2x3xf32>, tensor<f32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @neuron_states_kind(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(Neuron): attribute 'states' must be a list of strings, got a string}}
  %0 = snn.onnx_node "Neuron"(%x) domain "spikemesh" attrs {states = "v=0", charge = ["h = v + x"], fire = "h - 1", reset = "none"} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

// Parallel spiking neurons (PSN, MaskedPSN, SlidingPSN): their attributes, then their weight
// and bias against the input's T.
func.func @parallel_variant(%x: tensor<4x2x3xf32>, %w: tensor<4x4xf32>, %b: tensor<4x1xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(ParallelSpikingNeuron): variant 'conv' is not psn, masked or sliding}}
  %0 = snn.onnx_node "ParallelSpikingNeuron"(%x, %w, %b) domain "spikemesh" attrs {variant = "conv"} : (tensor<4x2x3xf32>, tensor<4x4xf32>, tensor<4x1xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @parallel_inputs(%x: tensor<4x2x3xf32>, %w: tensor<4x4xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(ParallelSpikingNeuron): expects 3 input(s) (x, weight, bias), got 2}}
  %0 = snn.onnx_node "ParallelSpikingNeuron"(%x, %w) domain "spikemesh" attrs {variant = "psn"} : (tensor<4x2x3xf32>, tensor<4x4xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @parallel_psn_k(%x: tensor<4x2x3xf32>, %w: tensor<4x4xf32>, %b: tensor<4x1xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(ParallelSpikingNeuron): variant psn takes no k}}
  %0 = snn.onnx_node "ParallelSpikingNeuron"(%x, %w, %b) domain "spikemesh" attrs {variant = "psn", k = 2 : i64} : (tensor<4x2x3xf32>, tensor<4x4xf32>, tensor<4x1xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @parallel_k_kind(%x: tensor<4x2x3xf32>, %w: tensor<2xf32>, %b: tensor<f32>) -> tensor<*xf32> {
  // expected-error @+1 {{(ParallelSpikingNeuron): attribute 'k' must be an integer, got a float}}
  %0 = snn.onnx_node "ParallelSpikingNeuron"(%x, %w, %b) domain "spikemesh" attrs {variant = "sliding", k = 2.0 : f32} : (tensor<4x2x3xf32>, tensor<2xf32>, tensor<f32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @parallel_k_zero(%x: tensor<4x2x3xf32>, %w: tensor<4x4xf32>, %b: tensor<4x1xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(ParallelSpikingNeuron): k must be >= 1, got 0}}
  %0 = snn.onnx_node "ParallelSpikingNeuron"(%x, %w, %b) domain "spikemesh" attrs {variant = "masked", k = 0 : i64, lambda = 0.0 : f32} : (tensor<4x2x3xf32>, tensor<4x4xf32>, tensor<4x1xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @parallel_masked_lambda(%x: tensor<4x2x3xf32>, %w: tensor<4x4xf32>, %b: tensor<4x1xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(ParallelSpikingNeuron): variant masked needs lambda (a float)}}
  %0 = snn.onnx_node "ParallelSpikingNeuron"(%x, %w, %b) domain "spikemesh" attrs {variant = "masked", k = 2 : i64} : (tensor<4x2x3xf32>, tensor<4x4xf32>, tensor<4x1xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @parallel_sliding_lambda(%x: tensor<4x2x3xf32>, %w: tensor<2xf32>, %b: tensor<f32>) -> tensor<*xf32> {
  // expected-error @+1 {{(ParallelSpikingNeuron): variant sliding takes no lambda}}
  %0 = snn.onnx_node "ParallelSpikingNeuron"(%x, %w, %b) domain "spikemesh" attrs {variant = "sliding", k = 2 : i64, lambda = 0.5 : f32} : (tensor<4x2x3xf32>, tensor<2xf32>, tensor<f32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @parallel_lambda_inf(%x: tensor<4x2x3xf32>, %w: tensor<4x4xf32>, %b: tensor<4x1xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(ParallelSpikingNeuron): lambda must be finite, got inf}}
  %0 = snn.onnx_node "ParallelSpikingNeuron"(%x, %w, %b) domain "spikemesh" attrs {variant = "masked", k = 2 : i64, lambda = 0x7F800000 : f32} : (tensor<4x2x3xf32>, tensor<4x4xf32>, tensor<4x1xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @parallel_unknown_attribute(%x: tensor<4x2x3xf32>, %w: tensor<4x4xf32>, %b: tensor<4x1xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(ParallelSpikingNeuron): unknown attribute 'v_threshold' (ParallelSpikingNeuron takes: alpha, beta, k, lambda, surrogate, variant)}}
  %0 = snn.onnx_node "ParallelSpikingNeuron"(%x, %w, %b) domain "spikemesh" attrs {variant = "psn", v_threshold = 1.0 : f32} : (tensor<4x2x3xf32>, tensor<4x4xf32>, tensor<4x1xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @parallel_k_above_t(%x: tensor<4x2x3xf32>, %w: tensor<5xf32>, %b: tensor<f32>) -> tensor<*xf32> {
  // expected-error @+1 {{(ParallelSpikingNeuron): k must be at most T = 4, got 5}}
  %0 = snn.onnx_node "ParallelSpikingNeuron"(%x, %w, %b) domain "spikemesh" attrs {variant = "sliding", k = 5 : i64} : (tensor<4x2x3xf32>, tensor<5xf32>, tensor<f32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @parallel_weight_shape(%x: tensor<4x2x3xf32>, %w: tensor<3x3xf32>, %b: tensor<4x1xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(ParallelSpikingNeuron): weight must be float32 [T, T] = [4, 4], got tensor<3x3xf32>}}
  %0 = snn.onnx_node "ParallelSpikingNeuron"(%x, %w, %b) domain "spikemesh" attrs {variant = "psn"} : (tensor<4x2x3xf32>, tensor<3x3xf32>, tensor<4x1xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @parallel_bias_shape(%x: tensor<4x2x3xf32>, %w: tensor<2xf32>, %b: tensor<1xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(ParallelSpikingNeuron): bias must be float32 [] (a scalar), got tensor<1xf32>}}
  %0 = snn.onnx_node "ParallelSpikingNeuron"(%x, %w, %b) domain "spikemesh" attrs {variant = "sliding", k = 2 : i64} : (tensor<4x2x3xf32>, tensor<2xf32>, tensor<1xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}
