// RUN: snn-opt %s -split-input-file | snn-opt -split-input-file | FileCheck %s
// RUN: snn-opt %s -split-input-file --snn-legalize-onnx | FileCheck %s --check-prefix=IMPORT
// SpikingJelly's parallel spiking neurons: snn.parallel_neuron round trip, and the ONNX
// ParallelSpikingNeuron node legalized to it.

// CHECK-LABEL: func.func @psn
func.func @psn(%x: tensor<4x2x3xf32>, %w: tensor<4x4xf32>, %b: tensor<4x1xf32>) -> tensor<4x2x3xf32> {
  // CHECK: snn.parallel_neuron %{{.*}}, %{{.*}}, %{{.*}} {alpha = 2.000000e+00 : f32, surrogate = #snn<surrogate atan>, variant = #snn<parallel_variant psn>} : tensor<4x2x3xf32>, tensor<4x4xf32>, tensor<4x1xf32>
  %0 = snn.parallel_neuron %x, %w, %b {variant = #snn<parallel_variant psn>, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x2x3xf32>, tensor<4x4xf32>, tensor<4x1xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

// CHECK-LABEL: func.func @masked
func.func @masked(%x: tensor<4x2x3x5xf32>, %w: tensor<4x4xf32>, %b: tensor<4x1xf32>) -> tensor<4x2x3x5xf32> {
  // CHECK: snn.parallel_neuron %{{.*}} {alpha = 4.000000e+00 : f32, beta = 1.000000e+00 : f32, k = 2 : i64, lambda = 5.000000e-01 : f32, surrogate = #snn<surrogate s2nn>, variant = #snn<parallel_variant masked>}
  %0 = snn.parallel_neuron %x, %w, %b {variant = #snn<parallel_variant masked>, k = 2 : i64, lambda = 0.5 : f32, surrogate = #snn<surrogate s2nn>, alpha = 4.0 : f32, beta = 1.0 : f32} : tensor<4x2x3x5xf32>, tensor<4x4xf32>, tensor<4x1xf32>
  return %0 : tensor<4x2x3x5xf32>
}

// -----

// CHECK-LABEL: func.func @sliding
func.func @sliding(%x: tensor<4x2x3xf32>, %w: tensor<4xf32>, %b: tensor<f32>) -> tensor<4x2x3xf32> {
  // CHECK: snn.parallel_neuron %{{.*}} {alpha = 2.000000e+00 : f32, k = 4 : i64, surrogate = #snn<surrogate atan>, variant = #snn<parallel_variant sliding>} : tensor<4x2x3xf32>, tensor<4xf32>, tensor<f32>
  %0 = snn.parallel_neuron %x, %w, %b {variant = #snn<parallel_variant sliding>, k = 4 : i64, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x2x3xf32>, tensor<4xf32>, tensor<f32>
  return %0 : tensor<4x2x3xf32>
}

// -----

// IMPORT-LABEL: func.func @from_onnx_masked
func.func @from_onnx_masked(%x: tensor<4x2x3xf32>, %w: tensor<4x4xf32>, %b: tensor<4x1xf32>) -> tensor<*xf32> {
  // IMPORT: snn.parallel_neuron %{{.*}}, %{{.*}}, %{{.*}} {alpha = 2.000000e+00 : f32, k = 3 : i64, lambda = 1.000000e+00 : f32, surrogate = #snn<surrogate atan>, variant = #snn<parallel_variant masked>} : tensor<4x2x3xf32>, tensor<4x4xf32>, tensor<4x1xf32>
  %0 = snn.onnx_node "ParallelSpikingNeuron"(%x, %w, %b) domain "spikemesh" attrs {variant = "masked", k = 3 : i64, lambda = 1.0 : f32, surrogate = "atan", alpha = 2.0 : f32} : (tensor<4x2x3xf32>, tensor<4x4xf32>, tensor<4x1xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

// A missing surrogate is SpikingJelly's neurons' default, sigmoid (the exporter always writes
// it: PSN's default is atan).
// IMPORT-LABEL: func.func @from_onnx_sliding
func.func @from_onnx_sliding(%x: tensor<8x2x3xf32>, %w: tensor<3xf32>, %b: tensor<f32>) -> tensor<*xf32> {
  // IMPORT: snn.parallel_neuron {{.*}} {alpha = 4.000000e+00 : f32, k = 3 : i64, surrogate = #snn<surrogate sigmoid>, variant = #snn<parallel_variant sliding>} : tensor<8x2x3xf32>, tensor<3xf32>, tensor<f32>
  %0 = snn.onnx_node "ParallelSpikingNeuron"(%x, %w, %b) domain "spikemesh" attrs {variant = "sliding", k = 3 : i64} : (tensor<8x2x3xf32>, tensor<3xf32>, tensor<f32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}
