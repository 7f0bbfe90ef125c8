// RUN: snn-opt %s -split-input-file -verify-diagnostics

// The inputs snn-run's kernels refuse (lib/Runtime/Execution: requireRank) are refused when
// the op is built, naming the op's input and where it comes from.

func.func @max_pool_after_reshape_to_rank_6(%x: tensor<4x2x16xf32>) -> tensor<4x2x1x2x2x2xf32> {
  %0 = snn.reshape %x {shape = array<i64: 1, 2, 2, 4>} : (tensor<4x2x16xf32>) -> tensor<4x2x1x2x2x4xf32>
  // expected-error @+2 {{max_pool2d input must have rank 5 ([T, N, C, H, W]), got 6 (the result of 'snn.reshape')}}
  // expected-error @+1 {{failed to infer returned types}}
  %1 = snn.max_pool2d %0 {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, ceil_mode = false} : (tensor<4x2x1x2x2x4xf32>) -> tensor<4x2x1x2x2x2xf32>
  return %1 : tensor<4x2x1x2x2x2xf32>
}

// -----

func.func @avg_pool_rank_6(%x: tensor<4x2x1x2x4x4xf32>) -> tensor<4x2x1x1x2x4xf32> {
  // expected-error @+2 {{avg_pool2d input must have rank 5 ([T, N, C, H, W]), got 6 (argument #0)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = snn.avg_pool2d %x {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, ceil_mode = false, count_include_pad = true} : (tensor<4x2x1x2x4x4xf32>) -> tensor<4x2x1x1x2x4xf32>
  return %0 : tensor<4x2x1x1x2x4xf32>
}

// -----

func.func @adaptive_avg_pool_rank_6(%x: tensor<4x2x1x2x4x4xf32>) -> tensor<4x2x1x1x1xf32> {
  // expected-error @+2 {{adaptive_avg_pool2d input must have rank 5 ([T, N, C, H, W]), got 6 (argument #0)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = snn.adaptive_avg_pool2d %x {output_size = array<i64: 1, 1>} : (tensor<4x2x1x2x4x4xf32>) -> tensor<4x2x1x1x1xf32>
  return %0 : tensor<4x2x1x1x1xf32>
}

// -----

func.func @batch_norm_rank_6(%x: tensor<4x2x3x2x2x2xf32>, %p: tensor<3xf32>) -> tensor<4x2x3x2x2x2xf32> {
  // expected-error @+2 {{batch_norm input must have rank 3 to 5 ([T, N, C, ...]), got 6 (argument #0)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = snn.batch_norm %x, %p, %p, %p, %p {eps = 1.0e-5 : f32, momentum = 0.1 : f32} : (tensor<4x2x3x2x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x2x3x2x2x2xf32>
  return %0 : tensor<4x2x3x2x2x2xf32>
}
