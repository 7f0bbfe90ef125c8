// RUN: rm -rf %t && snn-translate --export-artifact %s -o %t/art
// RUN: FileCheck %s --input-file=%t/art/manifest.json --check-prefix=MANIFEST
// RUN: %dump-onnx %t/art/program_0.onnx | FileCheck %s --check-prefix=PROGRAM
// Exporting again replaces the old artifact.
// RUN: snn-translate --export-artifact %s -o %t/art && ls %t | FileCheck %s --check-prefix=LS

// MANIFEST: "format": "spikemesh-artifact"
// MANIFEST: "input": {
// MANIFEST-NEXT: "name": "input",
// MANIFEST-NEXT: "shape": [
// MANIFEST-NEXT: 4,
// MANIFEST-NEXT: -1,
// MANIFEST: "time_major": true
// MANIFEST: "output": {
// MANIFEST: "time_major": false
// MANIFEST: "parameters": [
// MANIFEST: "kind": "parameter",
// MANIFEST-NEXT: "name": "fc.weight",
// MANIFEST: "kind": "buffer",
// MANIFEST-NEXT: "name": "bn.running_mean",
// MANIFEST: "plan": {
// MANIFEST: "mode": "none"
// MANIFEST: "programs": [
// MANIFEST: "file": "program_0.onnx",
// MANIFEST: "version": 2,
// MANIFEST: "world_size": 1

// PROGRAM: opset spikemesh 1
// PROGRAM: input input [4,N,6]
// PROGRAM: output output [N,3]
// PROGRAM: initializer fc.weight [3, 6] [0.5, 0.5, 0.5, 0.5]
// PROGRAM: initializer sn.w [] [0.25]
// PROGRAM: node 'fc' spikemesh.linear(input, fc.weight) -> v0 {}
// PROGRAM: node 'sn' spikemesh.plif_node(v0, sn.w) -> v1 {alpha=4.0, decay_input=1, detach_reset=0, surrogate=b'sigmoid', v_threshold=1.0}
// PROGRAM: node 'lif' spikemesh.lif_node(v1) -> v2 {alpha=2.0, decay_input=0, detach_reset=1, surrogate=b'atan', tau=1.3329999446868896, v_reset=0.0, v_threshold=1.0}
// PROGRAM: node 'bn' spikemesh.batch_norm(v2, bn.weight, bn.bias, bn.running_mean, bn.running_var) -> v3 {eps=9.999999747378752e-06, momentum=0.10000000149011612}
// PROGRAM: node 'readout' spikemesh.mean_time(v3) -> output {}

// LS: art
// LS-NOT: tmp

func.func @main(%x: tensor<4x?x6xf32>) -> tensor<?x3xf32> {
  %w = snn.parameter "fc.weight" = dense<0.5> : tensor<3x6xf32> loc("fc.weight")
  %pw = snn.parameter "sn.w" = dense<0.25> : tensor<f32>
  %g = snn.parameter "bn.weight" = dense<1.0> : tensor<3xf32>
  %b = snn.parameter "bn.bias" = dense<0.0> : tensor<3xf32>
  %rm = snn.parameter "bn.running_mean" buffer = dense<0.0> : tensor<3xf32>
  %rv = snn.parameter "bn.running_var" buffer = dense<1.0> : tensor<3xf32>
  %0 = snn.linear %x, %w : (tensor<4x?x6xf32>, tensor<3x6xf32>) -> tensor<4x?x3xf32> loc("fc")
  %1 = snn.plif_node %0, %pw {decay_input = true, v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x?x3xf32>, tensor<f32> loc("sn")
  %2 = snn.lif_node %1 {tau = 1.333 : f32, decay_input = false, v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = true, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x3xf32> loc("lif")
  %3 = snn.batch_norm %2, %g, %b, %rm, %rv {eps = 1.0e-5 : f32, momentum = 0.1 : f32} : (tensor<4x?x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x?x3xf32> loc("bn")
  %4 = snn.mean_time %3 : (tensor<4x?x3xf32>) -> tensor<?x3xf32> loc("readout")
  return %4 : tensor<?x3xf32>
}
