// RUN: not snn-opt %s --snn-legalize-onnx --split-input-file 2>&1 | FileCheck %s
// RUN: not snn-opt %s --snn-legalize-onnx --split-input-file --mlir-print-ir-after-failure 2>&1 | FileCheck %s --check-prefix=IR

// A fold region whose shapes do not fit is reported once, although the neuron's rewrite makes
// the greedy driver try its pattern again (-verify-diagnostics would accept a duplicate): the
// patterns never report; the node is explained once after the driver.
// CHECK: error: ONNX node '<unnamed>' (Gemm): snn.linear: linear input has 6 features but weight expects 5
// CHECK-NOT: error: ONNX node '<unnamed>' (Gemm)
// CHECK: error: ONNX node '<unnamed>' (MaxPool)
// CHECK-NOT: error:
func.func @reported_once(%x: tensor<4x?x6xf32>, %w: tensor<3x5xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 6]> : tensor<2xi64>
  %u = arith.constant dense<[4, -1, 3]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6xf32>, tensor<2xi64>) -> tensor<*xf32>
  %1 = snn.onnx_node "Gemm"(%0, %w) domain "" attrs {transB = 1 : i64} : (tensor<*xf32>, tensor<3x5xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  %3 = snn.onnx_node "IFNode"(%x) domain "spikemesh" attrs {} : (tensor<4x?x6xf32>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}

// -----

// A step rejected after valid ones (its window does not fit the 4x4 input) leaves the whole
// region as it was: nothing is created for the BatchNormalization before the MaxPool, and
// its statistics stay weights.
// IR-LABEL: func.func @untouched
// IR-NOT: snn.batch_norm
// IR: snn.parameter "bn.running_mean" =
// IR-NOT: snn.batch_norm
// IR-NEXT: snn.onnx_node "Reshape"
// IR-NEXT: snn.onnx_node "BatchNormalization"
// IR-NEXT: snn.onnx_node "MaxPool"
// IR-NEXT: snn.onnx_node "Reshape"
// IR-NOT: snn.batch_norm
func.func @untouched(%x: tensor<4x?x2x4x4xf32>, %p: tensor<2xf32>) -> tensor<*xf32> {
  %m = snn.parameter "bn.running_mean" = dense<0.0> : tensor<2xf32>
  %s = arith.constant dense<[-1, 2, 4, 4]> : tensor<4xi64>
  %u = arith.constant dense<[4, -1, 2, 2, 2]> : tensor<5xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x2x4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  %1 = snn.onnx_node "BatchNormalization"(%0, %p, %p, %m, %p) domain "" attrs {} : (tensor<*xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "MaxPool"(%1) domain "" attrs {kernel_shape = array<i64: 5, 5>, strides = array<i64: 2, 2>} : (tensor<*xf32>) -> tensor<*xf32>
  %3 = snn.onnx_node "Reshape"(%2, %u) domain "" attrs {} : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  return %3 : tensor<*xf32>
}
