// RUN: snn-opt %s -split-input-file -verify-diagnostics
// snn.recurrent_neuron's own errors (the description's are snn.neuron's, neuron-invalid.mlir).

func.func @not_features(%x: tensor<4x2x3x5xf32>, %w: tensor<3x3xf32>, %b: tensor<3xf32>) -> tensor<4x2x3x5xf32> {
  // expected-error @+1 {{input must be [T, N, F] features, got 'tensor<4x2x3x5xf32>'}}
  %0 = snn.recurrent_neuron %x, %w, %b {states = ["v=0"], constants = ["v_threshold=1", "v_reset=0"], operand_names = [], charge = ["h = v + x"], fire = "h - v_threshold", reset = "hard", detach_reset = false, update = [], output = "s", surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x2x3x5xf32>, tensor<3x3xf32>, tensor<3xf32>
  return %0 : tensor<4x2x3x5xf32>
}

// -----

func.func @weight_shape(%x: tensor<4x2x3xf32>, %w: tensor<3x2xf32>, %b: tensor<3xf32>) -> tensor<4x2x3xf32> {
  // expected-error @+1 {{recurrent_weight must be [F, F] for the input 'tensor<4x2x3xf32>', got 'tensor<3x2xf32>'}}
  %0 = snn.recurrent_neuron %x, %w, %b {states = ["v=0"], constants = ["v_threshold=1", "v_reset=0"], operand_names = [], charge = ["h = v + x"], fire = "h - v_threshold", reset = "hard", detach_reset = false, update = [], output = "s", surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x2x3xf32>, tensor<3x2xf32>, tensor<3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

func.func @bias_shape(%x: tensor<4x2x3xf32>, %w: tensor<3x3xf32>, %b: tensor<4xf32>) -> tensor<4x2x3xf32> {
  // expected-error @+1 {{recurrent_bias must be [F] for the input 'tensor<4x2x3xf32>', got 'tensor<4xf32>'}}
  %0 = snn.recurrent_neuron %x, %w, %b {states = ["v=0"], constants = ["v_threshold=1", "v_reset=0"], operand_names = [], charge = ["h = v + x"], fire = "h - v_threshold", reset = "hard", detach_reset = false, update = [], output = "s", surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x2x3xf32>, tensor<3x3xf32>, tensor<4xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

func.func @description(%x: tensor<4x2x3xf32>, %w: tensor<3x3xf32>, %b: tensor<3xf32>) -> tensor<4x2x3xf32> {
  // expected-error @+1 {{neuron charge statement 1 'h = v + y': unknown name 'y'}}
  %0 = snn.recurrent_neuron %x, %w, %b {states = ["v=0"], constants = ["v_threshold=1", "v_reset=0"], operand_names = [], charge = ["h = v + y"], fire = "h - v_threshold", reset = "hard", detach_reset = false, update = [], output = "s", surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x2x3xf32>, tensor<3x3xf32>, tensor<3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

func.func @spike_count(%x: tensor<4x2x3xf32>, %w: tensor<3x3xf32>, %b: tensor<3xf32>) -> tensor<4x2x3xf32> {
  // expected-error @+1 {{spike_count is not supported in a recurrent neuron}}
  %0 = snn.recurrent_neuron %x, %w, %b {states = ["v=0"], constants = [], operand_names = [], charge = ["h = v + x"], reset = "none", detach_reset = false, update = ["c = spike_count(h, 4, 0, 4)", "v = h - c"], output = "c", surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x2x3xf32>, tensor<3x3xf32>, tensor<3xf32>
  return %0 : tensor<4x2x3xf32>
}
