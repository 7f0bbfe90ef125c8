// RUN: not snn-opt %s --snn-legalize-onnx 2>&1 | FileCheck %s

// A rejected fold region is reported once, although the neuron's rewrite makes the greedy
// driver run the patterns again (-verify-diagnostics would accept a duplicate).
// CHECK: error: ONNX node '<unnamed>' (Gemm): only Gemm with transB=1, transA=0, alpha=beta=1 (Linear)
// CHECK-NOT: error:
func.func @reported_once(%x: tensor<4x?x6xf32>, %w: tensor<3x6xf32>) -> tensor<*xf32> {
  %s = arith.constant dense<[-1, 6]> : tensor<2xi64>
  %u = arith.constant dense<[4, -1, 3]> : tensor<3xi64>
  %0 = snn.onnx_node "Reshape"(%x, %s) domain "" attrs {} : (tensor<4x?x6xf32>, tensor<2xi64>) -> tensor<*xf32>
  %1 = snn.onnx_node "Gemm"(%0, %w) domain "" attrs {transB = 1 : i64, alpha = 2.0 : f32} : (tensor<*xf32>, tensor<3x6xf32>) -> tensor<*xf32>
  %2 = snn.onnx_node "Reshape"(%1, %u) domain "" attrs {} : (tensor<*xf32>, tensor<3xi64>) -> tensor<*xf32>
  %3 = snn.onnx_node "IFNode"(%x) domain "spikemesh" attrs {} : (tensor<4x?x6xf32>) -> tensor<*xf32>
  return %2 : tensor<*xf32>
}
