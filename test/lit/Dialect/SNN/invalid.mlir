// RUN: snn-opt %s -split-input-file -verify-diagnostics

func.func @lif_tau(%x: tensor<4x2x3xf32>) -> tensor<4x2x3xf32> {
  // expected-error @+1 {{tau must be > 1, got 1}}
  %0 = snn.lif_node %x {tau = 1.0 : f32, decay_input = true, v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

func.func @neuron_rank(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{input must be time-major [T, N, ...], got rank 1}}
  %0 = snn.if_node %x {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @surrogate_alpha(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{atan surrogate: alpha (alpha) must be a finite number > 0, got 0}}
  %0 = snn.if_node %x {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 0.0 : f32} : tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @surrogate_beta(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{the sigmoid surrogate takes no beta}}
  %0 = snn.if_node %x {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32, beta = 1.0 : f32} : tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @surrogate_second_parameter(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{piecewise_leaky_relu surrogate: alpha (w) must be a finite number > 0, got -1}}
  %0 = snn.if_node %x {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate piecewise_leaky_relu>, alpha = -1.0 : f32, beta = 0.01 : f32} : tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @q_pseudo_spike_alpha(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{q_pseudo_spike surrogate: alpha (alpha) must be a finite number > 1, got 1}}
  %0 = snn.if_node %x {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate q_pseudo_spike>, alpha = 1.0 : f32} : tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @linear_features(%x: tensor<4x2x5xf32>, %w: tensor<10x6xf32>) -> tensor<4x2x10xf32> {
  // expected-error @+2 {{linear input has 5 features but weight expects 6}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = snn.linear %x, %w : (tensor<4x2x5xf32>, tensor<10x6xf32>) -> tensor<4x2x10xf32>
  return %0 : tensor<4x2x10xf32>
}

// -----

func.func @linear_result(%x: tensor<4x2x6xf32>, %w: tensor<10x6xf32>) -> tensor<4x2x9xf32> {
  // expected-error @+2 {{'snn.linear' op inferred type(s) 'tensor<4x2x10xf32>' are incompatible with return type(s) of operation 'tensor<4x2x9xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = snn.linear %x, %w : (tensor<4x2x6xf32>, tensor<10x6xf32>) -> tensor<4x2x9xf32>
  return %0 : tensor<4x2x9xf32>
}

// -----

func.func @conv_channels(%x: tensor<4x2x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<4x2x4x6x6xf32> {
  // expected-error @+2 {{conv2d input has 3 channels but weight expects 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = snn.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<4x2x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<4x2x4x6x6xf32>
  return %0 : tensor<4x2x4x6x6xf32>
}

// -----

func.func @conv_groups(%x: tensor<4x2x4x8x8xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<4x2x6x6x6xf32> {
  // expected-error @+2 {{conv2d groups (4) must be positive and divide 6 output channels}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = snn.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 4 : i64} : (tensor<4x2x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<4x2x6x6x6xf32>
  return %0 : tensor<4x2x6x6x6xf32>
}

// -----

func.func @conv_rank(%x: tensor<4x2x3x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<4x2x4x6xf32> {
  // expected-error @+2 {{conv2d input must have rank 5 ([T, N, C, H, W]), got 4 (argument #0)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = snn.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<4x2x3x8xf32>, tensor<4x3x3x3xf32>) -> tensor<4x2x4x6xf32>
  return %0 : tensor<4x2x4x6xf32>
}

// -----

func.func @pool_window(%x: tensor<4x2x3x2x2xf32>) -> tensor<4x2x3x1x1xf32> {
  // expected-error @+2 {{window (kernel 3, stride 1, padding 0, dilation 1) does not fit spatial dim of size 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = snn.max_pool2d %x {kernel_size = array<i64: 3, 3>, stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, ceil_mode = false} : (tensor<4x2x3x2x2xf32>) -> tensor<4x2x3x1x1xf32>
  return %0 : tensor<4x2x3x1x1xf32>
}

// -----

func.func @pool_pair(%x: tensor<4x2x3x8x8xf32>) -> tensor<4x2x3x4x4xf32> {
  // expected-error @+2 {{'kernel_size' must have 2 values (height, width), got 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = snn.avg_pool2d %x {kernel_size = array<i64: 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, ceil_mode = false, count_include_pad = true} : (tensor<4x2x3x8x8xf32>) -> tensor<4x2x3x4x4xf32>
  return %0 : tensor<4x2x3x4x4xf32>
}

// -----

func.func @bn_channels(%x: tensor<4x2x3x8x8xf32>, %p: tensor<4xf32>) -> tensor<4x2x3x8x8xf32> {
  // expected-error @+2 {{batch_norm weight must be a 1-D tensor of 3 elements}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = snn.batch_norm %x, %p, %p, %p, %p {eps = 1.0e-5 : f32, momentum = 0.1 : f32} : (tensor<4x2x3x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4x2x3x8x8xf32>
  return %0 : tensor<4x2x3x8x8xf32>
}

// -----

func.func @dropout_p(%x: tensor<4x2x3xf32>) -> tensor<4x2x3xf32> {
  // expected-error @+2 {{dropout probability must be in [0, 1), got 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = snn.dropout %x {p = 1.0 : f32} : (tensor<4x2x3xf32>) -> tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

func.func @add_types(%a: tensor<4x2x3xf32>, %b: tensor<4x2x4xf32>) -> tensor<4x2x3xf32> {
  // expected-note @-1 {{prior use here}}
  // expected-error @+1 {{use of value '%b' expects different type than prior uses}}
  %0 = snn.add %a, %b : tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

func.func @mean_rank(%x: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+2 {{mean_time input must have rank >= 2 ([T, N, ...]), got 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = snn.mean_time %x : (tensor<4xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @parameter_name() -> tensor<2xf32> {
  // expected-error @+1 {{parameter name must not be empty}}
  %0 = snn.parameter "" = dense<0.0> : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @send_to_itself(%x: tensor<4x2x3xf32>) attributes {snn.pp_stage = 1 : i64} {
  // expected-error @+1 {{peer stage 1 is the stage it belongs to}}
  snn.send %x to stage 1 slot 0 : tensor<4x2x3xf32>
  return
}

// -----

func.func @recv_from_itself() -> tensor<4x2x3xf32> attributes {snn.pp_stage = 2 : i64} {
  // expected-error @+1 {{peer stage 2 is the stage it belongs to}}
  %0 = snn.recv from stage 2 slot 0 : tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

func.func @send_negative_slot(%x: tensor<4x2x3xf32>) {
  // expected-error @+1 {{peer stage and slot must be non-negative, got stage 1 slot -1}}
  snn.send %x to stage 1 slot -1 : tensor<4x2x3xf32>
  return
}

// -----

func.func @recv_negative_peer() -> tensor<4x2x3xf32> {
  // expected-error @+1 {{peer stage and slot must be non-negative, got stage -1 slot 0}}
  %0 = snn.recv from stage -1 slot 0 : tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

func.func @attention_heads_do_not_divide(%x: tensor<4x2x48x16xf32>) -> tensor<4x2x16x16xf32> {
  // expected-error @+2 {{spiking_attention input channels of tensor<4x2x48x16xf32> must be a static multiple of 3 * num_heads = 15 (q, k, v of whole heads)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = snn.spiking_attention %x {num_heads = 5 : i64, scale = 0.125 : f32} : (tensor<4x2x48x16xf32>) -> tensor<4x2x16x16xf32>
  return %0 : tensor<4x2x16x16xf32>
}

// -----

func.func @attention_rank(%x: tensor<4x2x48x4x4xf32>) -> tensor<4x2x16x4x4xf32> {
  // expected-error @+2 {{spiking_attention input must have rank 4 ([T, N, 3*C, L]), got 5 (argument #0)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = snn.spiking_attention %x {num_heads = 4 : i64, scale = 0.125 : f32} : (tensor<4x2x48x4x4xf32>) -> tensor<4x2x16x4x4xf32>
  return %0 : tensor<4x2x16x4x4xf32>
}

// -----

func.func @attention_no_heads(%x: tensor<4x2x48x16xf32>) -> tensor<4x2x16x16xf32> {
  // expected-error @+2 {{spiking_attention num_heads must be >= 1, got 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = snn.spiking_attention %x {num_heads = 0 : i64, scale = 0.125 : f32} : (tensor<4x2x48x16xf32>) -> tensor<4x2x16x16xf32>
  return %0 : tensor<4x2x16x16xf32>
}

// -----

func.func @reduce_mean_over_batch(%x: tensor<4x2x8x16xf32>) -> tensor<4x8x16xf32> {
  // expected-error @+2 {{reduce_mean axis 1 must be a per-step dim of tensor<4x2x8x16xf32> (2 to 3)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = snn.reduce_mean %x {axes = array<i64: 1>, keepdims = false} : (tensor<4x2x8x16xf32>) -> tensor<4x8x16xf32>
  return %0 : tensor<4x8x16xf32>
}

// -----

func.func @reduce_mean_unsorted(%x: tensor<4x2x8x16xf32>) -> tensor<4x2xf32> {
  // expected-error @+2 {{reduce_mean axes must be ascending and distinct, got 2 after 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = snn.reduce_mean %x {axes = array<i64: 3, 2>, keepdims = false} : (tensor<4x2x8x16xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}
