// RUN: snn-opt %s --snn-legalize-onnx --split-input-file -verify-diagnostics

// What the validation walk refuses before any rewrite: wrong input counts, unknown attributes,
// wrong-typed attributes (never compiled as their default) and bad values, before any snn op's
// inferring builder sees them. One diagnostic per problem, naming the node.
// (Node names come from the importer's NameLoc; Import/ONNX/errors.test checks them.)

// --- Inputs and outputs: the readers index inputs by these counts ------------------------------

func.func @max_pool_no_input() -> tensor<*xf32> {
  // expected-error @+1 {{ONNX node '<unnamed>' (MaxPool): expects 1 input(s) (X), got 0}}
  %0 = snn.onnx_node "MaxPool"() domain "" attrs {kernel_shape = array<i64: 2, 2>} : () -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @gemm_no_weight(%x: tensor<4x?x6xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 6]> : tensor<2xi64>
  %u = arith.constant dense<[4, -1, 3]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6xf32>, tensor<2xi64>) -> tensor<*xf32>
  // expected-error @+1 {{ONNX node '<unnamed>' (Gemm): expects 2 or 3 input(s) (X, W[, B]), got 1}}
  %1 = snn.onnx_node "Gemm"(%0) domain "" attrs {transB = 1 : i64} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

// The fold Reshape without its shape input.
func.func @fold_no_shape(%x: tensor<4x?x6xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{ONNX node '<unnamed>' (Reshape): expects 2 input(s) (data, shape), got 1}}
  %0 = snn.onnx_node "Reshape"(%x) domain "" attrs {} : (tensor<4x?x6xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

// ONNX's optional Dropout mask has no snn op; a replaced node must have one result.
func.func @dropout_mask(%x: tensor<4x?x6xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 6]> : tensor<2xi64>
  %u = arith.constant dense<[4, -1, 6]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6xf32>, tensor<2xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Dropout): expects 1 output, got 2}}
  %1:2 = snn.onnx_node "Dropout"(%0) domain "" attrs {} : (tensor<*xf32>) -> (tensor<*xf32>, tensor<*xf32>)
  %2 = snn.onnx_node "Reshape"(%1#0, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @neuron_no_output(%x: tensor<4x2x3xf32>) {
  // expected-error @+1 {{(IFNode): expects 1 output, got 0}}
  snn.onnx_node "IFNode"(%x) domain "spikemesh" attrs {} : (tensor<4x2x3xf32>) -> ()
  return
}

// -----

// --- Attribute names: a misspelt one would be read as its default ------------------------------

func.func @unknown_attribute(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{ONNX node '<unnamed>' (LIFNode): unknown attribute 'tua' (LIFNode takes: alpha, beta, decay_input, detach_reset, surrogate, tau, v_reset, v_threshold)}}
  %0 = snn.onnx_node "LIFNode"(%x) domain "spikemesh" attrs {tua = 0.5 : f32} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

// A LIFNode's attributes on an IFNode: one diagnostic for the node, not one per attribute,
// and not also the rules of the attributes it does know.
func.func @unknown_attributes(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(IFNode): unknown attributes 'decay_input', 'tau' (IFNode takes: alpha, beta, detach_reset, surrogate, v_reset, v_threshold)}}
  %0 = snn.onnx_node "IFNode"(%x) domain "spikemesh" attrs {tau = 2.0 : f32, decay_input = 1 : i64, v_threshold = 0x7FC00000 : f32} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @identity_attribute(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(Identity): unknown attribute 'axis' (Identity takes: none)}}
  %0 = snn.onnx_node "Identity"(%x) domain "" attrs {axis = 1 : i64} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

// Two bad nodes: one diagnostic each.
func.func @two_nodes(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(IFNode): unknown attribute 'bogus'}}
  %0 = snn.onnx_node "IFNode"(%x) domain "spikemesh" attrs {bogus = 1 : i64} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  // expected-error @+1 {{(LIFNode): attribute 'tau' must be a float, got an integer}}
  %1 = snn.onnx_node "LIFNode"(%0) domain "spikemesh" attrs {tau = 3 : i64} : (tensor<*xf32>) -> tensor<*xf32>
  return %1 : tensor<*xf32>
}

// -----

// --- Attribute kinds: ONNX's schema, no conversion -------------------------------------------

// v_threshold = 0 given as INT used to compile as the default 1.0.
func.func @threshold_int(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(IFNode): attribute 'v_threshold' must be a float, got an integer}}
  %0 = snn.onnx_node "IFNode"(%x) domain "spikemesh" attrs {v_threshold = 0 : i64} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @epsilon_int(%x: tensor<2x?x1x4x4xf32>, %p: tensor<1xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(BatchNormalization): attribute 'epsilon' must be a float, got an integer}}
  %1 = snn.onnx_node "BatchNormalization"(%0, %p, %p, %p, %p) domain "" attrs {epsilon = 0 : i64} : (tensor<*xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @kernel_shape_floats(%x: tensor<2x?x1x4x4xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 2, 2]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(MaxPool): attribute 'kernel_shape' must be a list of integers, got a list of floats}}
  %1 = snn.onnx_node "MaxPool"(%0) domain "" attrs {kernel_shape = array<f32: 2.0, 2.0>} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

// --- Values the snn ops' inference used to abort on ------------------------------------------

func.func @conv_dilations_negative(%x: tensor<2x?x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 2, 2]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Conv): attribute 'dilations' must be 2 positive integers, got [-1, -1]}}
  %1 = snn.onnx_node "Conv"(%0, %w) domain "" attrs {dilations = array<i64: -1, -1>} : (tensor<*xf32>, tensor<1x1x3x3xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @epsilon_zero(%x: tensor<2x?x1x4x4xf32>, %p: tensor<1xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 4, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(BatchNormalization): attribute 'epsilon' must be finite and > 0, got 0}}
  %1 = snn.onnx_node "BatchNormalization"(%0, %p, %p, %p, %p) domain "" attrs {epsilon = 0.0 : f32} : (tensor<*xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

// --- Operands validation can see -------------------------------------------------------------

func.func @reshape_shape_2d(%x: tensor<4x?x6xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[[-1], [6]]> : tensor<2x1xi64>
  // expected-error @+1 {{(Reshape): shape (input #1) must be a constant 1-D int64 tensor, got a constant tensor<2x1xi64>}}
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6xf32>, tensor<2x1xi64>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @reshape_shape_computed(%x: tensor<4x?x6xf32>, %s: tensor<2xi64>) -> tensor<*xf32> {
  // expected-error @+1 {{(Reshape): shape (input #1) must be a constant 1-D int64 tensor, got a computed tensor<2xi64>}}
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6xf32>, tensor<2xi64>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @plif_w_vector(%x: tensor<4x2x3xf32>, %w: tensor<3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(ParametricLIFNode): w (input #1) must be a float32 scalar, got tensor<3xf32>}}
  %0 = snn.onnx_node "ParametricLIFNode"(%x, %w) domain "spikemesh" attrs {} : (tensor<4x2x3xf32>, tensor<3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

// SpikeMesh's per-step nodes are validated like ONNX's.
func.func @adaptive_pool_size(%x: tensor<*xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(AdaptiveAvgPool2d): output_size must be 2 positive integers, got [7]}}
  %0 = snn.onnx_node "AdaptiveAvgPool2d"(%x) domain "spikemesh" attrs {output_size = array<i64: 7>} : (tensor<*xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @group_norm_attrs(%x: tensor<*xf32>, %g: tensor<4xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(GroupNorm): attribute 'num_groups' must be >= 1, got 0}}
  %0 = snn.onnx_node "GroupNorm"(%x, %g, %g) domain "spikemesh" attrs {num_groups = 0 : i64} : (tensor<*xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<*xf32>
  // expected-error @+1 {{(GroupNorm): unknown attribute 'groups' (GroupNorm takes: epsilon, num_groups)}}
  %1 = snn.onnx_node "GroupNorm"(%0, %g, %g) domain "spikemesh" attrs {groups = 2 : i64} : (tensor<*xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<*xf32>
  // expected-error @+1 {{(GroupNorm): expects 3 input(s) (X, scale, B), got 2}}
  %2 = snn.onnx_node "GroupNorm"(%1, %g) domain "spikemesh" attrs {num_groups = 2 : i64} : (tensor<*xf32>, tensor<4xf32>) -> tensor<*xf32>
  // expected-error @+1 {{(GroupNorm): attribute 'epsilon' must be a float, got an integer}}
  %3 = snn.onnx_node "GroupNorm"(%2, %g, %g) domain "spikemesh" attrs {num_groups = 2 : i64, epsilon = 1 : i64} : (tensor<*xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<*xf32>
  return %3 : tensor<*xf32>
}

// -----

func.func @concat_over_batch(%a: tensor<*xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(Concat): attribute 'axis' must be a per-step dim of the time-major operands (>= 2: not T or N), got 1}}
  %0 = snn.onnx_node "Concat"(%a, %a) domain "" attrs {axis = 1 : i64} : (tensor<*xf32>, tensor<*xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @sum_over_batch(%x: tensor<*xf32>) -> tensor<*xf32> {
  %axes = arith.constant dense<[1]> : tensor<1xi64>
  // expected-error @+1 {{(ReduceSum): only the readout over T, ReduceSum(axes=[0] constant, keepdims=0), is supported}}
  %0 = snn.onnx_node "ReduceSum"(%x, %axes) domain "" attrs {keepdims = 0 : i64} : (tensor<*xf32>, tensor<1xi64>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}
