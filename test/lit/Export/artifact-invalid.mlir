// RUN: rm -rf %t && snn-translate --export-artifact %s -o %t/art --verify-diagnostics
// RUN: not test -e %t/art

func.func @main(%x: tensor<4x?x6xf32>) -> tensor<4x?x6xf32> {
  // expected-error @+1 {{cannot export 'snn.onnx_node' (run the legalization pipeline first)}}
  %0 = snn.onnx_node "Softmax"(%x) domain "" attrs {} : (tensor<4x?x6xf32>) -> tensor<4x?x6xf32>
  return %0 : tensor<4x?x6xf32>
}
