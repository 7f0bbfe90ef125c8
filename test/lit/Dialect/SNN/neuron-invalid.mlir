// RUN: snn-opt %s -split-input-file -verify-diagnostics
// Every description error of snn.neuron, named by the part at fault.

func.func @unknown_name(%x: tensor<4x2x3xf32>) -> tensor<4x2x3xf32> {
  // expected-error @+1 {{neuron charge statement 1 'h = v + y': unknown name 'y'}}
  %0 = snn.neuron %x {states = ["v=0"], constants = ["v_threshold=1"], operand_names = [], charge = ["h = v + y"], fire = "h - v_threshold", reset = "soft", detach_reset = false, update = [], output = "s", surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

func.func @bad_state(%x: tensor<4x2x3xf32>) -> tensor<4x2x3xf32> {
  // expected-error @+1 {{neuron attribute 'states': 'v' is not 'name=value' with a finite number}}
  %0 = snn.neuron %x {states = ["v"], constants = [], operand_names = [], charge = ["h = v + x"], fire = "h - 1", reset = "soft", detach_reset = false, update = [], output = "s", surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

func.func @bad_reset(%x: tensor<4x2x3xf32>) -> tensor<4x2x3xf32> {
  // expected-error @+1 {{neuron attribute 'reset': 'subtract' is not hard, soft or none}}
  %0 = snn.neuron %x {states = ["v=0"], constants = [], operand_names = [], charge = ["h = v + x"], fire = "h - 1", reset = "subtract", detach_reset = false, update = [], output = "s", surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

func.func @no_h(%x: tensor<4x2x3xf32>) -> tensor<4x2x3xf32> {
  // expected-error @+1 {{neuron charge: no statement assigns 'h', the pre-fire potential}}
  %0 = snn.neuron %x {states = ["v=0"], constants = [], operand_names = [], charge = ["g = v + x"], fire = "g - 1", reset = "none", detach_reset = false, update = [], output = "g", surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

func.func @operand_count(%x: tensor<4x2x3xf32>, %k: tensor<f32>) -> tensor<4x2x3xf32> {
  // expected-error @+1 {{0 operand names for 1 operands}}
  %0 = snn.neuron %x(%k : tensor<f32>) {states = ["v=0"], constants = [], operand_names = [], charge = ["h = v + x"], fire = "h - 1", reset = "soft", detach_reset = false, update = [], output = "s", surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

func.func @operand_shape(%x: tensor<4x2x3xf32>, %k: tensor<2xf32>) -> tensor<4x2x3xf32> {
  // expected-error @+1 {{operand 'k' must be [], [C] or [T, C] of the input 'tensor<4x2x3xf32>' (C its dim 2), got 'tensor<2xf32>'}}
  %0 = snn.neuron %x(%k : tensor<2xf32>) {states = ["v=0"], constants = ["v_threshold=1"], operand_names = ["k"], charge = ["h = v + k * x"], fire = "h - 1", reset = "soft", detach_reset = false, update = [], output = "s", surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

func.func @surrogate_range(%x: tensor<4x2x3xf32>) -> tensor<4x2x3xf32> {
  // expected-error @+1 {{alpha}}
  %0 = snn.neuron %x {states = ["v=0"], constants = [], operand_names = [], charge = ["h = v + x"], fire = "h - 1", reset = "soft", detach_reset = false, update = [], output = "s", surrogate = #snn<surrogate sigmoid>, alpha = -1.0 : f32} : tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

func.func @rank(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{input must be time-major [T, N, ...], got rank 1}}
  %0 = snn.neuron %x {states = ["v=0"], constants = [], operand_names = [], charge = ["h = v + x"], fire = "h - 1", reset = "soft", detach_reset = false, update = [], output = "s", surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @per_step_shape(%x: tensor<4x2x3xf32>, %g: tensor<3xf32>) -> tensor<4x2x3xf32> {
  // expected-error @+1 {{operand 'g' must be [T] or [T, C] of the input 'tensor<4x2x3xf32>' (C its dim 2), got 'tensor<3xf32>'}}
  %0 = snn.neuron %x(%g : tensor<3xf32>) {states = ["v=0"], constants = [], operand_names = ["g[t]"], charge = ["h = v + g * x"], fire = "h - 1", reset = "none", detach_reset = false, update = [], output = "s", surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

func.func @spike_count_levels(%x: tensor<4x2x3xf32>) -> tensor<4x2x3xf32> {
  // expected-error @+1 {{neuron update statement 1 'c = spike_count(h, 2.5, 0, 2)': spike_count: D must be a whole number >= 1, got 2.5}}
  %0 = snn.neuron %x {states = ["v=0"], constants = [], operand_names = [], charge = ["h = v + x"], reset = "none", detach_reset = false, update = ["c = spike_count(h, 2.5, 0, 2)"], output = "c", surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}
