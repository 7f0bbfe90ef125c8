// RUN: snn-opt %s --snn-legalize-onnx=max-iterations=1 -verify-diagnostics
// RUN: snn-opt %s --snn-legalize-onnx=max-iterations=2 | FileCheck %s
// RUN: not snn-opt %s --snn-legalize-onnx=max-iterations=0 2>&1 | FileCheck %s --check-prefix=ZERO

// Any rewrite needs a second, change-free iteration to prove a fixpoint, so one iteration
// is not enough: the pass fails rather than pass on IR the driver gave up on.
// CHECK-LABEL: func.func @needs_two_iterations
// CHECK: snn.if_node
// CHECK-NOT: snn.onnx_node
// ZERO: error: snn-legalize-onnx: max-iterations must be >= 1, got 0
// expected-error @+1 {{ONNX legalization of function '@needs_two_iterations' did not converge within 1 iteration(s) of its rewrite patterns (0 snn.onnx_node op(s) left)}}
func.func @needs_two_iterations(%x: tensor<4x2x3xf32>) -> tensor<*xf32> {
  %0 = snn.onnx_node "IFNode"(%x) domain "spikemesh" attrs {} : (tensor<4x2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}
