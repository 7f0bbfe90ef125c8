// Eight single-layer units (a bare Sequential of 4 x (conv 256->256 3x3, IF)) on 2x2
// images: large weights, little compute per weight. Used for pipeline cases.
module {
  func.func @main(%x: tensor<4x?x256x2x2xf32>) -> tensor<?x256x2x2xf32> {
    %w0 = snn.parameter "0.weight" = dense<0.01> : tensor<256x256x3x3xf32> loc("0.weight")
    %w1 = snn.parameter "2.weight" = dense<0.01> : tensor<256x256x3x3xf32> loc("2.weight")
    %w2 = snn.parameter "4.weight" = dense<0.01> : tensor<256x256x3x3xf32> loc("4.weight")
    %w3 = snn.parameter "6.weight" = dense<0.01> : tensor<256x256x3x3xf32> loc("6.weight")
    %c0 = snn.conv2d %x, %w0 {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<4x?x256x2x2xf32>, tensor<256x256x3x3xf32>) -> tensor<4x?x256x2x2xf32> loc("0")
    %s0 = snn.if_node %c0 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x256x2x2xf32> loc("1")
    %c1 = snn.conv2d %s0, %w1 {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<4x?x256x2x2xf32>, tensor<256x256x3x3xf32>) -> tensor<4x?x256x2x2xf32> loc("2")
    %s1 = snn.if_node %c1 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x256x2x2xf32> loc("3")
    %c2 = snn.conv2d %s1, %w2 {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<4x?x256x2x2xf32>, tensor<256x256x3x3xf32>) -> tensor<4x?x256x2x2xf32> loc("4")
    %s2 = snn.if_node %c2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x256x2x2xf32> loc("5")
    %c3 = snn.conv2d %s2, %w3 {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<4x?x256x2x2xf32>, tensor<256x256x3x3xf32>) -> tensor<4x?x256x2x2xf32> loc("6")
    %s3 = snn.if_node %c3 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x256x2x2xf32> loc("7")
    %m = snn.mean_time %s3 : (tensor<4x?x256x2x2xf32>) -> tensor<?x256x2x2xf32> loc("mean")
    return %m : tensor<?x256x2x2xf32>
  }
}
