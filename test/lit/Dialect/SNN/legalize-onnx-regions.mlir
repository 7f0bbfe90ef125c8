// RUN: snn-opt %s --snn-legalize-onnx --split-input-file -verify-diagnostics

// Why a node survived the rewrite, reported after the greedy driver: once per node that does
// not merely consume another leftover (its error would only echo the cause), by the planning
// code its pattern ran silently. Shape errors come from the snn ops' own inference, called so
// that it can fail (their inferring builders would abort).

// --- Broken fold regions: the link that is wrong is named --------------------------------------

func.func @fold_shape(%x: tensor<4x?x6xf32>, %w: tensor<3x5xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 5]> : tensor<2xi64>
  %u = arith.constant dense<[4, -1, 3]> : tensor<3xi64>
  // expected-error @+1 {{(Reshape): fold shape [-1, 5] must be [-1] followed by the dims after T and N of its input tensor<4x?x6xf32>}}
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6xf32>, tensor<2xi64>) -> tensor<*xf32>
  %1 = snn.onnx_node "Gemm"(%0, %w) domain "" attrs {transB = 1 : i64} : (tensor<*xf32>, tensor<3x5xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @fold_unknown_input(%x: tensor<*xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 6]> : tensor<2xi64>
  %u = arith.constant dense<[4, -1, 6]> : tensor<3xi64>
  // expected-error @+1 {{(Reshape): folds a time-major [T, N, ...] tensor, but its input has no known shape (tensor<*xf32>)}}
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<*xf32>, tensor<2xi64>) -> tensor<*xf32>
  %1 = snn.onnx_node "Reshape"(%0, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %1 : tensor<*xf32>
}

// -----

func.func @step_used_twice(%x: tensor<4x?x6xf32>, %w: tensor<3x6xf32>) -> (tensor<*xf32>, tensor<*xf32>) {
  %s = arith.constant dense<[-1, 6]> : tensor<2xi64>
  %u = arith.constant dense<[4, -1, 3]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6xf32>, tensor<2xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Gemm): a per-step [T*N, ...] result inside the fold region of '<unnamed>' must have exactly one use, the next layer or the unfold; it has 2}}
  %1 = snn.onnx_node "Gemm"(%0, %w) domain "" attrs {transB = 1 : i64} : (tensor<*xf32>, tensor<3x6xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %2, %1 : tensor<*xf32>, tensor<*xf32>
}

// -----

func.func @never_unfolded(%x: tensor<4x?x6xf32>, %w: tensor<3x6xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 6]> : tensor<2xi64>
  // expected-error @+1 {{(Reshape): the [T*N, ...] fold region it opens is never unfolded to [T, N, ...] by a Reshape}}
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6xf32>, tensor<2xi64>) -> tensor<*xf32>
  %1 = snn.onnx_node "Gemm"(%0, %w) domain "" attrs {transB = 1 : i64} : (tensor<*xf32>, tensor<3x6xf32>) -> tensor<*xf32>
  return %1 : tensor<*xf32>
}

// -----

// A neuron needs T: it cannot run inside the region.
func.func @neuron_in_region(%x: tensor<4x?x6xf32>, %w: tensor<3x6xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 6]> : tensor<2xi64>
  %u = arith.constant dense<[4, -1, 3]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6xf32>, tensor<2xi64>) -> tensor<*xf32>
  %1 = snn.onnx_node "Gemm"(%0, %w) domain "" attrs {transB = 1 : i64} : (tensor<*xf32>, tensor<3x6xf32>) -> tensor<*xf32>
  // expected-error @+1 {{(IFNode): is inside the [T*N, ...] fold region of '<unnamed>' but is not a per-step layer; the region must end with a Reshape to [T, -1, ...] before it}}
  %2 = snn.onnx_node "IFNode"(%1) domain "spikemesh" attrs {} : (tensor<*xf32>) -> tensor<*xf32>
  %3 = snn.onnx_node "Reshape"(%2, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %3 : tensor<*xf32>
}

// -----

func.func @unfold_without_fold(%x: tensor<4x2x6xf32>) -> tensor<*xf32> {
  %u = arith.constant dense<[4, -1, 6]> : tensor<3xi64>
  // expected-error @+1 {{(Reshape): unfold Reshape to [4, -1, 6] without a fold: its input is not the last per-step layer of a region opened by a Reshape to [-1, ...]}}
  %0 = snn.onnx_node "Reshape"(%x, %u) domain "" attrs {} : (tensor<4x2x6xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @other_reshape(%x: tensor<4x2x6xf32>) -> tensor<*xf32> {
  %u = arith.constant dense<[4, 2, 2, 3]> : tensor<4xi64>
  // expected-error @+1 {{(Reshape): Reshape to [4, 2, 2, 3] is supported only as the fold [T, N, ...] -> [-1, ...] or the unfold [T*N, ...] -> [T, -1, ...] around per-step layers}}
  %0 = snn.onnx_node "Reshape"(%x, %u) domain "" attrs {} : (tensor<4x2x6xf32>, tensor<4xi64>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

// --- Shapes the snn ops' inference refuses ----------------------------------------------------

// BatchNorm statistics of shape [2, 1] (a mutant's dims): refused, where snn.batch_norm's
// builder used to abort.
func.func @batch_norm_stats_2d(%x: tensor<4x?x2x3xf32>, %p: tensor<2xf32>, %m: tensor<2x1xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 2, 3]> : tensor<3xi64>
  %u = arith.constant dense<[4, -1, 2, 3]> : tensor<4xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x2x3xf32>, tensor<3xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(BatchNormalization): snn.batch_norm: batch_norm running_mean must be a 1-D tensor of 2 elements, got tensor<2x1xf32>}}
  %1 = snn.onnx_node "BatchNormalization"(%0, %p, %p, %m, %p) domain "" attrs {} : (tensor<*xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2x1xf32>, tensor<2xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<4xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @linear_weight_3d(%x: tensor<4x?x6xf32>, %w: tensor<3x6x1xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 6]> : tensor<2xi64>
  %u = arith.constant dense<[4, -1, 3]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6xf32>, tensor<2xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Gemm): snn.linear: linear weight must be [out_features, in_features], got tensor<3x6x1xf32>}}
  %1 = snn.onnx_node "Gemm"(%0, %w) domain "" attrs {transB = 1 : i64} : (tensor<*xf32>, tensor<3x6x1xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

// A kernel of 2^62 with dilation 4: the window arithmetic is checked, not wrapped.
func.func @window_overflow(%x: tensor<2x?x1x4x4xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 1, 4]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(MaxPool): snn.max_pool2d: window (kernel 4611686018427387904, stride 1, padding 0, dilation 4) does not fit spatial dim of size 4}}
  %1 = snn.onnx_node "MaxPool"(%0) domain "" attrs {kernel_shape = array<i64: 4611686018427387904, 1>, dilations = array<i64: 4, 1>} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

func.func @flatten_overflow(%x: tensor<2x?x4294967296x4294967296xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 4294967296, 4294967296]> : tensor<3xi64>
  %u = arith.constant dense<[2, -1, 1]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x4294967296x4294967296xf32>, tensor<3xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Flatten): snn.flatten: flatten input tensor<2x?x4294967296x4294967296xf32> has more features per step than 64 bits can count}}
  %1 = snn.onnx_node "Flatten"(%0) domain "" attrs {} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

// snn.mean_time's builder used to abort on a rank-1 input.
func.func @reduce_mean_rank1(%x: tensor<6xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(ReduceMean): input must be a time-major [T, N, ...] f32 tensor, got tensor<6xf32>}}
  %0 = snn.onnx_node "ReduceMean"(%x) domain "" attrs {axes = array<i64: 0>, keepdims = 0 : i64} : (tensor<6xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @neuron_unknown_input(%x: tensor<*xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(IFNode): input has no known shape (tensor<*xf32>); it must be a time-major [T, N, ...] tensor}}
  %0 = snn.onnx_node "IFNode"(%x) domain "spikemesh" attrs {} : (tensor<*xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

// --- Causes, not consequences ---------------------------------------------------------------

// The neuron and the second region consume the failed region: only the cause is reported.
func.func @consequences(%x: tensor<4x?x6xf32>, %w: tensor<3x5xf32>, %v: tensor<2x3xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 6]> : tensor<2xi64>
  %u = arith.constant dense<[4, -1, 3]> : tensor<3xi64>
  %s2 = arith.constant dense<[-1, 3]> : tensor<2xi64>
  %u2 = arith.constant dense<[4, -1, 2]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6xf32>, tensor<2xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Gemm): snn.linear: linear input has 6 features but weight expects 5}}
  %1 = snn.onnx_node "Gemm"(%0, %w) domain "" attrs {transB = 1 : i64} : (tensor<*xf32>, tensor<3x5xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  %3 = snn.onnx_node "IFNode"(%2) domain "spikemesh" attrs {} : (tensor<*xf32>) -> tensor<*xf32>
  %4 = snn.onnx_node "Reshape"(%3, %s2) domain "" attrs {} : (tensor<*xf32>, tensor<2xi64>) -> tensor<*xf32>
  %5 = snn.onnx_node "Gemm"(%4, %v) domain "" attrs {transB = 1 : i64} : (tensor<*xf32>, tensor<2x3xf32>) -> tensor<*xf32>
  %6 = snn.onnx_node "Reshape"(%5, %u2) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %6 : tensor<*xf32>
}

// -----

// Two independent regions, both wrong: one error each.
func.func @two_causes(%x: tensor<4x?x6xf32>, %w: tensor<3x5xf32>, %v: tensor<3x7xf32>) -> (tensor<*xf32>, tensor<*xf32>) {
  %s = arith.constant dense<[-1, 6]> : tensor<2xi64>
  %u = arith.constant dense<[4, -1, 3]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6xf32>, tensor<2xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Gemm): snn.linear: linear input has 6 features but weight expects 5}}
  %1 = snn.onnx_node "Gemm"(%0, %w) domain "" attrs {transB = 1 : i64} : (tensor<*xf32>, tensor<3x5xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  %3 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6xf32>, tensor<2xi64>) -> tensor<*xf32>
  // expected-error @+1 {{(Gemm): snn.linear: linear input has 6 features but weight expects 7}}
  %4 = snn.onnx_node "Gemm"(%3, %v) domain "" attrs {transB = 1 : i64} : (tensor<*xf32>, tensor<3x7xf32>) -> tensor<*xf32>
  %5 = snn.onnx_node "Reshape"(%4, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %2, %5 : tensor<*xf32>, tensor<*xf32>
}

// -----

// Identity is a step op and a time-major op; outside a region it is explained as the latter.
func.func @identity_rank1(%x: tensor<6xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{(Identity): input must be a time-major [T, N, ...] f32 tensor, got tensor<6xf32>}}
  %0 = snn.onnx_node "Identity"(%x) domain "" attrs {} : (tensor<6xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}
