// RUN: snn-opt %s -split-input-file -verify-diagnostics
// Every verifier error of snn.parallel_neuron.

func.func @rank(%x: tensor<4xf32>, %w: tensor<4x4xf32>, %b: tensor<4x1xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{input must be time-major [T, N, ...], got rank 1}}
  %0 = snn.parallel_neuron %x, %w, %b {variant = #snn<parallel_variant psn>, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4xf32>, tensor<4x4xf32>, tensor<4x1xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @surrogate(%x: tensor<4x2xf32>, %w: tensor<4x4xf32>, %b: tensor<4x1xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{the atan surrogate takes no beta}}
  %0 = snn.parallel_neuron %x, %w, %b {variant = #snn<parallel_variant psn>, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32, beta = 1.0 : f32} : tensor<4x2xf32>, tensor<4x4xf32>, tensor<4x1xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @dynamic_steps(%x: tensor<?x2xf32>, %w: tensor<4x4xf32>, %b: tensor<4x1xf32>) -> tensor<?x2xf32> {
  // expected-error @+1 {{needs a static number of time steps (input dim 0)}}
  %0 = snn.parallel_neuron %x, %w, %b {variant = #snn<parallel_variant psn>, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<?x2xf32>, tensor<4x4xf32>, tensor<4x1xf32>
  return %0 : tensor<?x2xf32>
}

// -----

func.func @psn_k(%x: tensor<4x2xf32>, %w: tensor<4x4xf32>, %b: tensor<4x1xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{psn takes no k (its weight is the whole [T, T] matrix)}}
  %0 = snn.parallel_neuron %x, %w, %b {variant = #snn<parallel_variant psn>, k = 2 : i64, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x2xf32>, tensor<4x4xf32>, tensor<4x1xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @sliding_no_k(%x: tensor<4x2xf32>, %w: tensor<2xf32>, %b: tensor<f32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{sliding needs k}}
  %0 = snn.parallel_neuron %x, %w, %b {variant = #snn<parallel_variant sliding>, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x2xf32>, tensor<2xf32>, tensor<f32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @k_above_t(%x: tensor<4x2xf32>, %w: tensor<5xf32>, %b: tensor<f32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{k must be in 1..T (T = 4), got 5}}
  %0 = snn.parallel_neuron %x, %w, %b {variant = #snn<parallel_variant sliding>, k = 5 : i64, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x2xf32>, tensor<5xf32>, tensor<f32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @k_zero(%x: tensor<4x2xf32>, %w: tensor<4x4xf32>, %b: tensor<4x1xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{k must be in 1..T (T = 4), got 0}}
  %0 = snn.parallel_neuron %x, %w, %b {variant = #snn<parallel_variant masked>, k = 0 : i64, lambda = 0.0 : f32, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x2xf32>, tensor<4x4xf32>, tensor<4x1xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @masked_no_lambda(%x: tensor<4x2xf32>, %w: tensor<4x4xf32>, %b: tensor<4x1xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{masked needs lambda}}
  %0 = snn.parallel_neuron %x, %w, %b {variant = #snn<parallel_variant masked>, k = 2 : i64, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x2xf32>, tensor<4x4xf32>, tensor<4x1xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @psn_lambda(%x: tensor<4x2xf32>, %w: tensor<4x4xf32>, %b: tensor<4x1xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{psn takes no lambda (only masked does)}}
  %0 = snn.parallel_neuron %x, %w, %b {variant = #snn<parallel_variant psn>, lambda = 0.5 : f32, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x2xf32>, tensor<4x4xf32>, tensor<4x1xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @lambda_nan(%x: tensor<4x2xf32>, %w: tensor<4x4xf32>, %b: tensor<4x1xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{lambda must be finite}}
  %0 = snn.parallel_neuron %x, %w, %b {variant = #snn<parallel_variant masked>, k = 2 : i64, lambda = 0x7FC00000 : f32, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x2xf32>, tensor<4x4xf32>, tensor<4x1xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @weight_shape(%x: tensor<4x2xf32>, %w: tensor<3x3xf32>, %b: tensor<4x1xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{psn weight must be [T, T] = [4, 4], got 'tensor<3x3xf32>'}}
  %0 = snn.parallel_neuron %x, %w, %b {variant = #snn<parallel_variant psn>, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x2xf32>, tensor<3x3xf32>, tensor<4x1xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @sliding_weight(%x: tensor<4x2xf32>, %w: tensor<3xf32>, %b: tensor<f32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{sliding weight must be [k] = [2], got 'tensor<3xf32>'}}
  %0 = snn.parallel_neuron %x, %w, %b {variant = #snn<parallel_variant sliding>, k = 2 : i64, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x2xf32>, tensor<3xf32>, tensor<f32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @bias_shape(%x: tensor<4x2xf32>, %w: tensor<4x4xf32>, %b: tensor<4xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{masked bias must be [T, 1] = [4, 1], got 'tensor<4xf32>'}}
  %0 = snn.parallel_neuron %x, %w, %b {variant = #snn<parallel_variant masked>, k = 2 : i64, lambda = 1.0 : f32, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x2xf32>, tensor<4x4xf32>, tensor<4xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @sliding_bias(%x: tensor<4x2xf32>, %w: tensor<2xf32>, %b: tensor<4x1xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{sliding bias must be a scalar, got 'tensor<4x1xf32>'}}
  %0 = snn.parallel_neuron %x, %w, %b {variant = #snn<parallel_variant sliding>, k = 2 : i64, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x2xf32>, tensor<2xf32>, tensor<4x1xf32>
  return %0 : tensor<4x2xf32>
}
