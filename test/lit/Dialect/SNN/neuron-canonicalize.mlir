// RUN: snn-opt %s -split-input-file --canonicalize | FileCheck %s
// A described neuron that is IF, LIF or ParametricLIF canonicalizes to the named op; one that
// differs anywhere (its initial membrane, an operation, its order) stays described.

// SpikingJelly's SimpleIFNode with v_reset 0: the IF neuron.
// CHECK-LABEL: func.func @simple_if_is_if
func.func @simple_if_is_if(%x: tensor<4x2x3xf32>) -> tensor<4x2x3xf32> {
  // CHECK: snn.if_node %{{.*}} {alpha = 3.000000e+00 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, v_reset = 0.000000e+00 : f32, v_threshold = 1.000000e+00 : f32} : tensor<4x2x3xf32>
  // CHECK-NOT: snn.neuron
  %0 = snn.neuron %x {states = ["v=0.0"], constants = ["v_threshold=1.0", "v_reset=0.0"], operand_names = [], charge = ["h = v + x"], fire = "h - v_threshold", reset = "hard", detach_reset = false, update = [], output = "s", surrogate = #snn<surrogate atan>, alpha = 3.0 : f32} : tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

// CHECK-LABEL: func.func @lif_soft_detached
func.func @lif_soft_detached(%x: tensor<4x2x3xf32>) -> tensor<4x2x3xf32> {
  // CHECK: snn.lif_node %{{.*}} {alpha = 4.000000e+00 : f32, decay_input = false, detach_reset = true, surrogate = #snn<surrogate sigmoid>, tau = 1.750000e+00 : f32, v_threshold = 5.000000e-01 : f32} : tensor<4x2x3xf32>
  %0 = snn.neuron %x {states = ["v=0"], constants = ["tau=1.75", "vr=0.0", "v_threshold=0.5"], operand_names = [], charge = ["h = v - (v - vr) / tau + x"], fire = "h - v_threshold", reset = "soft", detach_reset = true, update = [], output = "s", surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

// CHECK-LABEL: func.func @plif_hard
func.func @plif_hard(%x: tensor<4x2x3xf32>, %w: tensor<f32>) -> tensor<4x2x3xf32> {
  // CHECK: snn.plif_node %{{.*}}, %{{.*}} {alpha = 4.000000e+00 : f32, decay_input = true, detach_reset = false, surrogate = #snn<surrogate sigmoid>, v_reset = -2.500000e-01 : f32, v_threshold = 1.000000e+00 : f32} : tensor<4x2x3xf32>, tensor<f32>
  %0 = snn.neuron %x(%w : tensor<f32>) {states = ["v=-0.25"], constants = ["v_threshold=1", "v_reset=-0.25"], operand_names = ["w"], charge = ["h = v + (x - (v - v_reset)) * sigmoid(w)"], fire = "h - v_threshold", reset = "hard", detach_reset = false, update = [], output = "s", surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

// Near misses stay described: a membrane starting at 0 with v_reset -0.25 (SimpleIFNode's),
// the input added in the other order, tau <= 1, and an analog output.
// CHECK-LABEL: func.func @near_misses
func.func @near_misses(%x: tensor<4x2x3xf32>) -> (tensor<4x2x3xf32>, tensor<4x2x3xf32>, tensor<4x2x3xf32>, tensor<4x2x3xf32>) {
  // CHECK-COUNT-4: snn.neuron
  // CHECK-NOT: _node
  %0 = snn.neuron %x {states = ["v=0"], constants = ["v_threshold=1", "v_reset=-0.25"], operand_names = [], charge = ["h = v + x"], fire = "h - v_threshold", reset = "hard", detach_reset = false, update = [], output = "s", surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x2x3xf32>
  %1 = snn.neuron %x {states = ["v=0"], constants = ["v_threshold=1", "v_reset=0"], operand_names = [], charge = ["h = x + v"], fire = "h - v_threshold", reset = "hard", detach_reset = false, update = [], output = "s", surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x2x3xf32>
  %2 = snn.neuron %x {states = ["v=0"], constants = ["tau=0.5", "v_threshold=1", "v_reset=0"], operand_names = [], charge = ["h = v + (x - (v - v_reset)) / tau"], fire = "h - v_threshold", reset = "hard", detach_reset = false, update = [], output = "s", surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x2x3xf32>
  %3 = snn.neuron %x {states = ["v=0"], constants = ["v_threshold=1", "v_reset=0"], operand_names = [], charge = ["h = v + x"], fire = "h - v_threshold", reset = "hard", detach_reset = false, update = [], output = "h", surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x2x3xf32>
  return %0, %1, %2, %3 : tensor<4x2x3xf32>, tensor<4x2x3xf32>, tensor<4x2x3xf32>, tensor<4x2x3xf32>
}
