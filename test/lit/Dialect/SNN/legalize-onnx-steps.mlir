// RUN: snn-opt %s --split-input-file | FileCheck %s --check-prefix=ONNX
// RUN: snn-opt %s --snn-legalize-onnx --canonicalize --split-input-file | FileCheck %s

// One case per step op of a fold region, [T, N, ...] -Reshape-> [T*N, ...] -op-> [T*N, ...]
// -Reshape-> [T, N, ...]: ONNX checks the op as imported, CHECK the time-distributed snn op
// that replaces the whole region (both Reshapes gone, the op applied to the [T, N, ...] input).

// ONNX-LABEL: func.func @gemm_linear
// ONNX: snn.onnx_node "Reshape"
// ONNX: snn.onnx_node "Gemm"(%{{.*}}, %{{.*}}, %{{.*}}) domain "" attrs {transB = 1 : i64}
// ONNX: snn.onnx_node "Reshape"
// CHECK-LABEL: func.func @gemm_linear
// CHECK-SAME: (%[[X:.*]]: tensor<4x?x6xf32>, %[[W:.*]]: tensor<3x6xf32>, %[[B:.*]]: tensor<3xf32>) -> tensor<4x?x3xf32>
// CHECK-NEXT: %[[L:.*]] = snn.linear %[[X]], %[[W]], %[[B]] : (tensor<4x?x6xf32>, tensor<3x6xf32>, tensor<3xf32>) -> tensor<4x?x3xf32>
// CHECK-NEXT: return %[[L]]
func.func @gemm_linear(%x: tensor<4x?x6xf32>, %w: tensor<3x6xf32>, %b: tensor<3xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 6]> : tensor<2xi64>
  %u = arith.constant dense<[4, -1, 3]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6xf32>, tensor<2xi64>) -> tensor<*xf32>
  %1 = snn.onnx_node "Gemm"(%0, %w, %b) domain "" attrs {transB = 1 : i64} : (tensor<*xf32>, tensor<3x6xf32>, tensor<3xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

// Explicit Linear-form attributes are accepted; without C there is no bias.
// ONNX-LABEL: func.func @gemm_no_bias
// ONNX: snn.onnx_node "Gemm"(%{{.*}}, %{{.*}}) domain "" attrs {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 1 : i64}
// CHECK-LABEL: func.func @gemm_no_bias
// CHECK-SAME: (%[[X:.*]]: tensor<2x5x6xf32>) -> tensor<2x5x4xf32>
// CHECK: %[[W:.*]] = snn.parameter "fc.weight"
// CHECK-NEXT: %[[L:.*]] = snn.linear %[[X]], %[[W]] : (tensor<2x5x6xf32>, tensor<4x6xf32>) -> tensor<2x5x4xf32>
// CHECK-NEXT: return %[[L]]
func.func @gemm_no_bias(%x: tensor<2x5x6xf32>) -> tensor<*xf32> {
  %w = snn.parameter "fc.weight" = dense<0.5> : tensor<4x6xf32>
  %s = arith.constant dense<[-1, 6]> : tensor<2xi64>
  %u = arith.constant dense<[2, -1, 4]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x5x6xf32>, tensor<2xi64>) -> tensor<*xf32>
  %1 = snn.onnx_node "Gemm"(%0, %w) domain "" attrs {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<*xf32>, tensor<4x6xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

// Running statistics become buffers (scale and bias stay weights); ONNX momentum 0.99
// (weight of the old statistic) is PyTorch momentum 0.01.
// ONNX-LABEL: func.func @batch_norm
// ONNX: snn.onnx_node "BatchNormalization"({{.*}}) domain "" attrs {epsilon = 1.000000e-03 : f32, momentum = 9.900000e-01 : f32}
// CHECK-LABEL: func.func @batch_norm
// CHECK-SAME: (%[[X:.*]]: tensor<4x?x2x3x3xf32>) -> tensor<4x?x2x3x3xf32>
// CHECK-DAG: %[[G:.*]] = snn.parameter "bn.weight" =
// CHECK-DAG: %[[B:.*]] = snn.parameter "bn.bias" =
// CHECK-DAG: %[[M:.*]] = snn.parameter "bn.running_mean" buffer =
// CHECK-DAG: %[[V:.*]] = snn.parameter "bn.running_var" buffer =
// CHECK: %[[N:.*]] = snn.batch_norm %[[X]], %[[G]], %[[B]], %[[M]], %[[V]] {eps = 1.000000e-03 : f32, momentum = 0.00999999977 : f32} : {{.*}} -> tensor<4x?x2x3x3xf32>
// CHECK-NEXT: return %[[N]]
func.func @batch_norm(%x: tensor<4x?x2x3x3xf32>) -> tensor<*xf32> {
  %g = snn.parameter "bn.weight" = dense<1.0> : tensor<2xf32>
  %b = snn.parameter "bn.bias" = dense<0.0> : tensor<2xf32>
  %m = snn.parameter "bn.running_mean" = dense<0.0> : tensor<2xf32>
  %v = snn.parameter "bn.running_var" = dense<1.0> : tensor<2xf32>
  %s = arith.constant dense<[-1, 2, 3, 3]> : tensor<4xi64>
  %u = arith.constant dense<[4, -1, 2, 3, 3]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x2x3x3xf32>, tensor<4xi64>) -> tensor<*xf32>
  %1 = snn.onnx_node "BatchNormalization"(%0, %g, %b, %m, %v) domain "" attrs {epsilon = 1.0e-3 : f32, momentum = 0.99 : f32} : (tensor<*xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

// ONNX defaults: epsilon 1e-5, momentum 0.9 (PyTorch 0.1); explicit training_mode = 0.
// CHECK-LABEL: func.func @batch_norm_defaults
// CHECK: snn.batch_norm {{.*}} {eps = 9.99999974E-6 : f32, momentum = 1.000000e-01 : f32}
func.func @batch_norm_defaults(%x: tensor<4x2x2x3xf32>, %p: tensor<2xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 2, 3]> : tensor<3xi64>
  %u = arith.constant dense<[4, -1, 2, 3]> : tensor<4xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x2x2x3xf32>, tensor<3xi64>) -> tensor<*xf32>
  %1 = snn.onnx_node "BatchNormalization"(%0, %p, %p, %p, %p) domain "" attrs {training_mode = 0 : i64} : (tensor<*xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<4xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

// MaxPool defaults: stride 1, no padding, dilation 1, floor mode.
// ONNX-LABEL: func.func @max_pool_defaults
// ONNX: snn.onnx_node "MaxPool"(%{{.*}}) domain "" attrs {kernel_shape = array<i64: 2, 2>}
// CHECK-LABEL: func.func @max_pool_defaults
// CHECK-SAME: (%[[X:.*]]: tensor<2x?x3x4x4xf32>) -> tensor<2x?x3x3x3xf32>
// CHECK-NEXT: %[[P:.*]] = snn.max_pool2d %[[X]] {ceil_mode = false, dilation = array<i64: 1, 1>, kernel_size = array<i64: 2, 2>, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x?x3x4x4xf32>) -> tensor<2x?x3x3x3xf32>
// CHECK-NEXT: return %[[P]]
func.func @max_pool_defaults(%x: tensor<2x?x3x4x4xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 3, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 3, 3, 3]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x3x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  %1 = snn.onnx_node "MaxPool"(%0) domain "" attrs {kernel_shape = array<i64: 2, 2>} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

// Strides, symmetric pads (ONNX [top, left, bottom, right] -> PyTorch [h, w]), ceil_mode and
// dilations: 8x8, kernel 3, stride 2, pad 1, ceil -> 5x5; then kernel 2, dilation 2 -> 3x3.
// ONNX-LABEL: func.func @max_pool_attrs
// ONNX: snn.onnx_node "MaxPool"(%{{.*}}) domain "" attrs {ceil_mode = 1 : i64, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
// ONNX: snn.onnx_node "MaxPool"(%{{.*}}) domain "" attrs {dilations = array<i64: 2, 2>, kernel_shape = array<i64: 2, 2>, storage_order = 0 : i64}
// CHECK-LABEL: func.func @max_pool_attrs
// CHECK-SAME: (%[[X:.*]]: tensor<2x?x1x8x8xf32>) -> tensor<2x?x1x3x3xf32>
// CHECK-NEXT: %[[P:.*]] = snn.max_pool2d %[[X]] {ceil_mode = true, dilation = array<i64: 1, 1>, kernel_size = array<i64: 3, 3>, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<2x?x1x8x8xf32>) -> tensor<2x?x1x5x5xf32>
// CHECK-NEXT: %[[Q:.*]] = snn.max_pool2d %[[P]] {ceil_mode = false, dilation = array<i64: 2, 2>, kernel_size = array<i64: 2, 2>, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x?x1x5x5xf32>) -> tensor<2x?x1x3x3xf32>
// CHECK-NEXT: return %[[Q]]
func.func @max_pool_attrs(%x: tensor<2x?x1x8x8xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 8, 8]> : tensor<4xi64>
  %u = arith.constant dense<[2, -1, 1, 3, 3]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<2x?x1x8x8xf32>, tensor<4xi64>) -> tensor<*xf32>
  %1 = snn.onnx_node "MaxPool"(%0) domain "" attrs {ceil_mode = 1 : i64, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "MaxPool"(%1) domain "" attrs {dilations = array<i64: 2, 2>, kernel_shape = array<i64: 2, 2>, storage_order = 0 : i64} : (tensor<*xf32>) -> tensor<*xf32>
  %3 = snn.onnx_node "Reshape"(%2, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %3 : tensor<*xf32>
}

// -----

// AveragePool: ONNX's count_include_pad defaults to 0 (PyTorch's to True, so the exporter
// writes it); pads, strides and ceil_mode carry over.
// ONNX-LABEL: func.func @avg_pool
// ONNX: snn.onnx_node "AveragePool"(%{{.*}}) domain "" attrs {kernel_shape = array<i64: 2, 2>}
// ONNX: snn.onnx_node "AveragePool"(%{{.*}}) domain "" attrs {ceil_mode = 1 : i64, count_include_pad = 1 : i64, kernel_shape = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
// CHECK-LABEL: func.func @avg_pool
// CHECK-SAME: (%[[X:.*]]: tensor<3x?x2x5x5xf32>) -> tensor<3x?x2x3x3xf32>
// CHECK-NEXT: %[[P:.*]] = snn.avg_pool2d %[[X]] {ceil_mode = false, count_include_pad = false, kernel_size = array<i64: 2, 2>, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<3x?x2x5x5xf32>) -> tensor<3x?x2x4x4xf32>
// CHECK-NEXT: %[[Q:.*]] = snn.avg_pool2d %[[P]] {ceil_mode = true, count_include_pad = true, kernel_size = array<i64: 2, 2>, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<3x?x2x4x4xf32>) -> tensor<3x?x2x3x3xf32>
// CHECK-NEXT: return %[[Q]]
func.func @avg_pool(%x: tensor<3x?x2x5x5xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 2, 5, 5]> : tensor<4xi64>
  %u = arith.constant dense<[3, -1, 2, 3, 3]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<3x?x2x5x5xf32>, tensor<4xi64>) -> tensor<*xf32>
  %1 = snn.onnx_node "AveragePool"(%0) domain "" attrs {kernel_shape = array<i64: 2, 2>} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "AveragePool"(%1) domain "" attrs {ceil_mode = 1 : i64, count_include_pad = 1 : i64, kernel_shape = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<*xf32>) -> tensor<*xf32>
  %3 = snn.onnx_node "Reshape"(%2, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %3 : tensor<*xf32>
}

// -----

// GlobalAveragePool is adaptive pooling to 1x1 (keeps the spatial dims, as ONNX does).
// ONNX-LABEL: func.func @global_avg_pool
// ONNX: snn.onnx_node "GlobalAveragePool"(%{{.*}}) domain "" attrs {}
// CHECK-LABEL: func.func @global_avg_pool
// CHECK-SAME: (%[[X:.*]]: tensor<4x?x8x7x7xf32>) -> tensor<4x?x8x1x1xf32>
// CHECK-NEXT: %[[P:.*]] = snn.adaptive_avg_pool2d %[[X]] {output_size = array<i64: 1, 1>} : (tensor<4x?x8x7x7xf32>) -> tensor<4x?x8x1x1xf32>
// CHECK-NEXT: return %[[P]]
func.func @global_avg_pool(%x: tensor<4x?x8x7x7xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 8, 7, 7]> : tensor<4xi64>
  %u = arith.constant dense<[4, -1, 8, 1, 1]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x8x7x7xf32>, tensor<4xi64>) -> tensor<*xf32>
  %1 = snn.onnx_node "GlobalAveragePool"(%0) domain "" attrs {} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

// Flatten(axis=1) of [T*N, C, H, W] flattens each step's [C, H, W]; axis defaults to 1.
// ONNX-LABEL: func.func @flatten
// ONNX: snn.onnx_node "Flatten"(%{{.*}}) domain "" attrs {axis = 1 : i64}
// ONNX: snn.onnx_node "Flatten"(%{{.*}}) domain "" attrs {}
// CHECK-LABEL: func.func @flatten
// CHECK-SAME: (%[[X:.*]]: tensor<4x?x8x1x1xf32>, %[[Y:.*]]: tensor<4x2x3x5xf32>) -> (tensor<4x?x8xf32>, tensor<4x2x15xf32>)
// CHECK-NEXT: %[[F:.*]] = snn.flatten %[[X]] : (tensor<4x?x8x1x1xf32>) -> tensor<4x?x8xf32>
// CHECK-NEXT: %[[G:.*]] = snn.flatten %[[Y]] : (tensor<4x2x3x5xf32>) -> tensor<4x2x15xf32>
// CHECK-NEXT: return %[[F]], %[[G]]
func.func @flatten(%x: tensor<4x?x8x1x1xf32>, %y: tensor<4x2x3x5xf32>) -> (tensor<*xf32>, tensor<*xf32>) {
  %s = arith.constant dense<[-1, 8, 1, 1]> : tensor<4xi64>
  %u = arith.constant dense<[4, -1, 8]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x8x1x1xf32>, tensor<4xi64>) -> tensor<*xf32>
  %1 = snn.onnx_node "Flatten"(%0) domain "" attrs {axis = 1 : i64} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  %s2 = arith.constant dense<[-1, 3, 5]> : tensor<3xi64>
  %u2 = arith.constant dense<[4, -1, 15]> : tensor<3xi64>
  %3 = snn.onnx_node "Reshape"(%y, %s2) domain "" attrs {} : (tensor<4x2x3x5xf32>, tensor<3xi64>) -> tensor<*xf32>
  %4 = snn.onnx_node "Flatten"(%3) domain "" attrs {} : (tensor<*xf32>) -> tensor<*xf32>
  %5 = snn.onnx_node "Reshape"(%4, %u2) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %2, %5 : tensor<*xf32>, tensor<*xf32>
}

// -----

// The Dropout ratio is the constant second input (the exporter's initializer); without it,
// ONNX's default 0.5. The ratio parameter is dead afterwards and canonicalized away.
// ONNX-LABEL: func.func @dropout
// ONNX: snn.parameter "drop.ratio" = dense<2.500000e-01> : tensor<f32>
// ONNX: snn.onnx_node "Dropout"(%{{.*}}, %{{.*}}) domain "" attrs {}
// ONNX: snn.onnx_node "Dropout"(%{{.*}}) domain "" attrs {}
// CHECK-LABEL: func.func @dropout
// CHECK-SAME: (%[[X:.*]]: tensor<4x?x6xf32>) -> tensor<4x?x6xf32>
// CHECK-NOT: snn.parameter
// CHECK-NEXT: %[[D:.*]] = snn.dropout %[[X]] {p = 2.500000e-01 : f32} : (tensor<4x?x6xf32>) -> tensor<4x?x6xf32>
// CHECK-NEXT: %[[E:.*]] = snn.dropout %[[D]] {p = 5.000000e-01 : f32} : (tensor<4x?x6xf32>) -> tensor<4x?x6xf32>
// CHECK-NEXT: return %[[E]]
func.func @dropout(%x: tensor<4x?x6xf32>) -> tensor<*xf32> {
  %r = snn.parameter "drop.ratio" = dense<0.25> : tensor<f32>
  %s = arith.constant dense<[-1, 6]> : tensor<2xi64>
  %u = arith.constant dense<[4, -1, 6]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6xf32>, tensor<2xi64>) -> tensor<*xf32>
  %1 = snn.onnx_node "Dropout"(%0, %r) domain "" attrs {} : (tensor<*xf32>, tensor<f32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Dropout"(%1) domain "" attrs {} : (tensor<*xf32>) -> tensor<*xf32>
  %3 = snn.onnx_node "Reshape"(%2, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %3 : tensor<*xf32>
}

// -----

// A classifier head in one fold: every step is rewritten on the previous step's result and
// Identity disappears.
// ONNX-LABEL: func.func @head
// ONNX-COUNT-2: snn.onnx_node "Reshape"
// CHECK-LABEL: func.func @head
// CHECK-SAME: (%[[X:.*]]: tensor<4x?x8x2x2xf32>, %[[W:.*]]: tensor<10x8xf32>) -> tensor<4x?x10xf32>
// CHECK-NEXT: %[[P:.*]] = snn.adaptive_avg_pool2d %[[X]] {{.*}} -> tensor<4x?x8x1x1xf32>
// CHECK-NEXT: %[[F:.*]] = snn.flatten %[[P]] : {{.*}} -> tensor<4x?x8xf32>
// CHECK-NEXT: %[[D:.*]] = snn.dropout %[[F]] {p = 5.000000e-01 : f32}
// CHECK-NEXT: %[[L:.*]] = snn.linear %[[D]], %[[W]] : {{.*}} -> tensor<4x?x10xf32>
// CHECK-NEXT: return %[[L]]
func.func @head(%x: tensor<4x?x8x2x2xf32>, %w: tensor<10x8xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 8, 2, 2]> : tensor<4xi64>
  %u = arith.constant dense<[4, -1, 10]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x8x2x2xf32>, tensor<4xi64>) -> tensor<*xf32>
  %1 = snn.onnx_node "GlobalAveragePool"(%0) domain "" attrs {} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Flatten"(%1) domain "" attrs {axis = 1 : i64} : (tensor<*xf32>) -> tensor<*xf32>
  %3 = snn.onnx_node "Identity"(%2) domain "" attrs {} : (tensor<*xf32>) -> tensor<*xf32>
  %4 = snn.onnx_node "Dropout"(%3) domain "" attrs {} : (tensor<*xf32>) -> tensor<*xf32>
  %5 = snn.onnx_node "Gemm"(%4, %w) domain "" attrs {transB = 1 : i64} : (tensor<*xf32>, tensor<10x8xf32>) -> tensor<*xf32>
  %6 = snn.onnx_node "Reshape"(%5, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %6 : tensor<*xf32>
}

// -----

// SpikeMesh's per-step nodes: an adaptive average pool to a size that is no whole
// window of its input, and a group norm; both inside one fold region.
// ONNX-LABEL: func.func @spikemesh_steps
// ONNX: snn.onnx_node "AdaptiveAvgPool2d"(%{{.*}}) domain "spikemesh" attrs {output_size = array<i64: 7, 7>}
// ONNX: snn.onnx_node "GroupNorm"(%{{.*}}, %{{.*}}, %{{.*}}) domain "spikemesh" attrs {epsilon = 9.99999974E-6 : f32, num_groups = 2 : i64}
// CHECK-LABEL: func.func @spikemesh_steps
// CHECK-SAME: (%[[X:.*]]: tensor<4x?x4x1x1xf32>) -> tensor<4x?x4x7x7xf32>
// CHECK-DAG: %[[G:.*]] = snn.parameter "gn.weight" =
// CHECK-DAG: %[[B:.*]] = snn.parameter "gn.bias" =
// CHECK: %[[P:.*]] = snn.adaptive_avg_pool2d %[[X]] {output_size = array<i64: 7, 7>} : (tensor<4x?x4x1x1xf32>) -> tensor<4x?x4x7x7xf32>
// CHECK-NEXT: %[[N:.*]] = snn.group_norm %[[P]], %[[G]], %[[B]] {eps = 9.99999974E-6 : f32, num_groups = 2 : i64} : {{.*}} -> tensor<4x?x4x7x7xf32>
// CHECK-NEXT: return %[[N]]
func.func @spikemesh_steps(%x: tensor<4x?x4x1x1xf32>) -> tensor<*xf32> {
  %g = snn.parameter "gn.weight" = dense<1.0> : tensor<4xf32>
  %b = snn.parameter "gn.bias" = dense<0.0> : tensor<4xf32>
  %s = arith.constant dense<[-1, 4, 1, 1]> : tensor<4xi64>
  %u = arith.constant dense<[4, -1, 4, 7, 7]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x4x1x1xf32>, tensor<4xi64>) -> tensor<*xf32>
  %1 = snn.onnx_node "AdaptiveAvgPool2d"(%0) domain "spikemesh" attrs {output_size = array<i64: 7, 7>} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "GroupNorm"(%1, %g, %b) domain "spikemesh" attrs {epsilon = 1.0e-5 : f32, num_groups = 2 : i64} : (tensor<*xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<*xf32>
  %3 = snn.onnx_node "Reshape"(%2, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %3 : tensor<*xf32>
}

// -----

// A fold that reshapes (a VotingLayer): [T, N, 8] -> [T*N, 1, 1, 8], AveragePool [1, 4],
// Flatten -> [T, N, 2]. The fold's new per-step dims become snn.reshape.
// CHECK-LABEL: func.func @voting_fold
// CHECK-SAME: (%[[X:.*]]: tensor<4x?x8xf32>) -> tensor<4x?x2xf32>
// CHECK-NEXT: %[[R:.*]] = snn.reshape %[[X]] {shape = array<i64: 1, 1, 8>} : (tensor<4x?x8xf32>) -> tensor<4x?x1x1x8xf32>
// CHECK-NEXT: %[[P:.*]] = snn.avg_pool2d %[[R]] {{.*}}kernel_size = array<i64: 1, 4>{{.*}} -> tensor<4x?x1x1x2xf32>
// CHECK-NEXT: %[[F:.*]] = snn.flatten %[[P]] : (tensor<4x?x1x1x2xf32>) -> tensor<4x?x2xf32>
// CHECK-NEXT: return %[[F]]
func.func @voting_fold(%x: tensor<4x?x8xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 1, 1, 8]> : tensor<4xi64>
  %u = arith.constant dense<[4, -1, 2]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x8xf32>, tensor<4xi64>) -> tensor<*xf32>
  %1 = snn.onnx_node "AveragePool"(%0) domain "" attrs {kernel_shape = array<i64: 1, 4>, strides = array<i64: 1, 4>} : (tensor<*xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Flatten"(%1) domain "" attrs {axis = 1 : i64} : (tensor<*xf32>) -> tensor<*xf32>
  %3 = snn.onnx_node "Reshape"(%2, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %3 : tensor<*xf32>
}

// -----

// torch.cat of time-major tensors on channels is snn.concat.
// CHECK-LABEL: func.func @concat_channels
// CHECK-SAME: (%[[A:.*]]: tensor<4x?x3x5x5xf32>, %[[B:.*]]: tensor<4x?x2x5x5xf32>) -> tensor<4x?x5x5x5xf32>
// CHECK-NEXT: %[[C:.*]] = snn.concat %[[A]], %[[B]] {axis = 2 : i64} : (tensor<4x?x3x5x5xf32>, tensor<4x?x2x5x5xf32>) -> tensor<4x?x5x5x5xf32>
// CHECK-NEXT: return %[[C]]
func.func @concat_channels(%a: tensor<4x?x3x5x5xf32>, %b: tensor<4x?x2x5x5xf32>) -> tensor<*xf32> {
  %0 = snn.onnx_node "Concat"(%a, %b) domain "" attrs {axis = 2 : i64} : (tensor<4x?x3x5x5xf32>, tensor<4x?x2x5x5xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

// The readout x.sum(0): ReduceSum over T with its opset-13 axes input.
// CHECK-LABEL: func.func @sum_over_time
// CHECK-SAME: (%[[X:.*]]: tensor<4x?x3xf32>) -> tensor<?x3xf32>
// CHECK-NEXT: %[[S:.*]] = snn.sum_time %[[X]] : (tensor<4x?x3xf32>) -> tensor<?x3xf32>
// CHECK-NEXT: return %[[S]]
func.func @sum_over_time(%x: tensor<4x?x3xf32>) -> tensor<*xf32> {
  %axes = arith.constant dense<[0]> : tensor<1xi64>
  %0 = snn.onnx_node "ReduceSum"(%x, %axes) domain "" attrs {keepdims = 0 : i64} : (tensor<4x?x3xf32>, tensor<1xi64>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}
