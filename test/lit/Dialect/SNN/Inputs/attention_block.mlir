// A Spikformer attention block as --snn-legalize-onnx leaves it (T = 2, 8 channels, 2 heads,
// 4 tokens): the qkv projection (a 1x1 conv2d over the [C, 1, L] view and its batch_norm), the
// qkv, attention and projection LIFs, the projection, the mean over tokens. The qkv
// batch_norm's weight holds each channel's own index, so a relayout shows in its values.
func.func @main(%x: tensor<2x?x8x4xf32>) -> tensor<2x?x8xf32> {
  %wq = snn.parameter "attn.qkv_conv_bn.0.weight" = dense<0.5> : tensor<24x8x1x1xf32>
  %gq = snn.parameter "attn.qkv_conv_bn.1.weight" = dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0]> : tensor<24xf32>
  %bq = snn.parameter "attn.qkv_conv_bn.1.bias" = dense<0.0> : tensor<24xf32>
  %mq = snn.parameter "attn.qkv_conv_bn.1.running_mean" buffer = dense<0.0> : tensor<24xf32>
  %vq = snn.parameter "attn.qkv_conv_bn.1.running_var" buffer = dense<1.0> : tensor<24xf32>
  %wp = snn.parameter "attn.proj_conv_bn.0.weight" = dense<0.25> : tensor<8x8x1x1xf32>
  %gp = snn.parameter "attn.proj_conv_bn.1.weight" = dense<1.0> : tensor<8xf32>
  %bp = snn.parameter "attn.proj_conv_bn.1.bias" = dense<0.0> : tensor<8xf32>
  %mp = snn.parameter "attn.proj_conv_bn.1.running_mean" buffer = dense<0.0> : tensor<8xf32>
  %vp = snn.parameter "attn.proj_conv_bn.1.running_var" buffer = dense<1.0> : tensor<8xf32>
  %0 = snn.reshape %x {shape = array<i64: 8, 1, 4>} : (tensor<2x?x8x4xf32>) -> tensor<2x?x8x1x4xf32> loc("attn.qkv_conv_bn/fold")
  %1 = snn.conv2d %0, %wq {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x?x8x1x4xf32>, tensor<24x8x1x1xf32>) -> tensor<2x?x24x1x4xf32> loc("attn.qkv_conv_bn.0")
  %2 = snn.batch_norm %1, %gq, %bq, %mq, %vq {eps = 1.0e-5 : f32, momentum = 0.1 : f32} : (tensor<2x?x24x1x4xf32>, tensor<24xf32>, tensor<24xf32>, tensor<24xf32>, tensor<24xf32>) -> tensor<2x?x24x1x4xf32> loc("attn.qkv_conv_bn.1")
  %3 = snn.reshape %2 {shape = array<i64: 24, 4>} : (tensor<2x?x24x1x4xf32>) -> tensor<2x?x24x4xf32> loc("attn.qkv_conv_bn/fold#1")
  %4 = snn.lif_node %3 {alpha = 4.0 : f32, decay_input = true, detach_reset = true, surrogate = #snn<surrogate sigmoid>, tau = 2.0 : f32, v_reset = 0.0 : f32, v_threshold = 1.0 : f32} : tensor<2x?x24x4xf32> loc("attn.qkv_lif")
  %5 = snn.spiking_attention %4 {num_heads = 2 : i64, scale = 0.125 : f32} : (tensor<2x?x24x4xf32>) -> tensor<2x?x8x4xf32> loc("attn/attention")
  %6 = snn.lif_node %5 {alpha = 4.0 : f32, decay_input = true, detach_reset = true, surrogate = #snn<surrogate sigmoid>, tau = 2.0 : f32, v_reset = 0.0 : f32, v_threshold = 0.5 : f32} : tensor<2x?x8x4xf32> loc("attn.attn_lif")
  %7 = snn.reshape %6 {shape = array<i64: 8, 1, 4>} : (tensor<2x?x8x4xf32>) -> tensor<2x?x8x1x4xf32> loc("attn.proj_conv_bn/fold")
  %8 = snn.conv2d %7, %wp {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x?x8x1x4xf32>, tensor<8x8x1x1xf32>) -> tensor<2x?x8x1x4xf32> loc("attn.proj_conv_bn.0")
  %9 = snn.batch_norm %8, %gp, %bp, %mp, %vp {eps = 1.0e-5 : f32, momentum = 0.1 : f32} : (tensor<2x?x8x1x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x?x8x1x4xf32> loc("attn.proj_conv_bn.1")
  %10 = snn.reshape %9 {shape = array<i64: 8, 4>} : (tensor<2x?x8x1x4xf32>) -> tensor<2x?x8x4xf32> loc("attn.proj_conv_bn/fold#1")
  %11 = snn.lif_node %10 {alpha = 4.0 : f32, decay_input = true, detach_reset = true, surrogate = #snn<surrogate sigmoid>, tau = 2.0 : f32, v_reset = 0.0 : f32, v_threshold = 1.0 : f32} : tensor<2x?x8x4xf32> loc("attn.proj_lif")
  %12 = snn.reduce_mean %11 {axes = array<i64: 3>, keepdims = false} : (tensor<2x?x8x4xf32>) -> tensor<2x?x8xf32> loc("mean")
  return %12 : tensor<2x?x8xf32>
}
