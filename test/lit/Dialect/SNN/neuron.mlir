// RUN: snn-opt %s -split-input-file | snn-opt -split-input-file | FileCheck %s
// RUN: snn-opt %s -split-input-file --snn-legalize-onnx | FileCheck %s --check-prefix=IMPORT
// A neuron described by its parts: round trip, and the ONNX `Neuron` node legalized to it.

// CHECK-LABEL: func.func @izhikevich
func.func @izhikevich(%x: tensor<4x2x3xf32>) -> tensor<4x2x3xf32> {
  // CHECK: snn.neuron %{{.*}} {{{.*}}charge = ["h = v + (x - w) / tau", "w = w + (h - w) / tau"]{{.*}}states = ["v=0", "w=0"]{{.*}}} : tensor<4x2x3xf32>
  %0 = snn.neuron %x {states = ["v=0", "w=0"], constants = ["tau=2", "v_threshold=1"], operand_names = [], charge = ["h = v + (x - w) / tau", "w = w + (h - w) / tau"], fire = "h - v_threshold", reset = "soft", detach_reset = false, update = ["w = w + 0.5 * s"], output = "s", surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

// CHECK-LABEL: func.func @per_channel
func.func @per_channel(%x: tensor<4x2x3x5xf32>, %k: tensor<3xf32>, %g: tensor<4x3xf32>) -> tensor<4x2x3x5xf32> {
  // CHECK: snn.neuron %{{.*}}(%{{.*}}, %{{.*}} : tensor<3xf32>, tensor<4x3xf32>)
  %0 = snn.neuron %x(%k, %g : tensor<3xf32>, tensor<4x3xf32>) {states = ["v=0"], constants = ["v_threshold=1", "v_reset=0"], operand_names = ["k", "g"], charge = ["h = v * sigmoid(k) + x * g"], fire = "h - v_threshold", reset = "hard", detach_reset = false, update = [], output = "s", surrogate = #snn<surrogate rect>, alpha = 1.0 : f32} : tensor<4x2x3x5xf32>
  return %0 : tensor<4x2x3x5xf32>
}

// -----

// A per-step [T] operand (`name[t]`) and a multi-level spike count (ILIF's firing).
// CHECK-LABEL: func.func @per_step_count
func.func @per_step_count(%x: tensor<4x2x3xf32>, %g: tensor<4xf32>) -> tensor<4x2x3xf32> {
  // CHECK: snn.neuron %{{.*}}(%{{.*}} : tensor<4xf32>) {{{.*}}operand_names = ["g[t]"]{{.*}}update = ["c = spike_count(h / 0.5, 4, 0, 4)", "v = h - c * 0.5"]}
  %0 = snn.neuron %x(%g : tensor<4xf32>) {states = ["v=0"], constants = [], operand_names = ["g[t]"], charge = ["h = v + sigmoid(g) * x"], reset = "none", detach_reset = false, update = ["c = spike_count(h / 0.5, 4, 0, 4)", "v = h - c * 0.5"], output = "c", surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

// IMPORT-LABEL: func.func @from_onnx
func.func @from_onnx(%x: tensor<4x2x3xf32>, %k: tensor<f32>) -> tensor<*xf32> {
  // IMPORT: snn.neuron %{{.*}}(%{{.*}} : tensor<f32>) {alpha = 4.000000e+00 : f32, charge = ["h = relu(k * (v + x))"], constants = ["v_threshold=1"], detach_reset = false, fire = "h - v_threshold", operand_names = ["k"], output = "s", reset = "soft", states = ["v=0"], surrogate = #snn<surrogate sigmoid>, update = []} : tensor<4x2x3xf32>
  %0 = snn.onnx_node "Neuron"(%x, %k) domain "spikemesh" attrs {states = ["v=0"], constants = ["v_threshold=1"], operand_names = ["k"], charge = ["h = relu(k * (v + x))"], fire = "h - v_threshold", reset = "soft"} : (tensor<4x2x3xf32>, tensor<f32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}
