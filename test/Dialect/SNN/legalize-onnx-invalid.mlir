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
  // expected-error @+1 {{(LIFNode): tau must be > 1, got 1}}
  %0 = snn.onnx_node "LIFNode"(%x) domain "spikemesh" attrs {tau = 1.0 : f32} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @plif_w(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(ParametricLIFNode): expects the input and the scalar w}}
  %0 = snn.onnx_node "ParametricLIFNode"(%x) domain "spikemesh" attrs {} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @surrogate(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(IFNode): unknown surrogate 'erf' (expected sigmoid or atan)}}
  %0 = snn.onnx_node "IFNode"(%x) domain "spikemesh" attrs {surrogate = "erf"} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @fold_mismatch(%x: tensor<4x?x6xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 6]> : tensor<2xi64>
  %u = arith.constant dense<[3, -1, 6]> : tensor<3xi64>
  // expected-error @+1 {{(Reshape): not part of a [T, N, ...] <-> [T*N, ...] fold of a stateless layer}}
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6xf32>, tensor<2xi64>) -> tensor<*xf32>
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

// The snn op's shape/attribute checks reject the ratio; this used to abort in the builder.
func.func @dropout_ratio_one(%x: tensor<4x?x6xf32>) -> tensor<*xf32> {
  %r = snn.parameter "drop.ratio" = dense<1.0> : tensor<f32>
  %s = arith.constant dense<[-1, 6]> : tensor<2xi64>
  %u = arith.constant dense<[4, -1, 6]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6xf32>, tensor<2xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Dropout): snn.dropout: dropout probability must be in [0, 1), got 1.00}}
  %1 = snn.onnx_node "Dropout"(%0, %r) domain "" attrs {} : (tensor<*xf32>, tensor<f32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}
