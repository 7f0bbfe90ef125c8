// snnexport.make_case --model csnn --width 8 --T 2, legalized by snn-compile;
// weights replaced by splats (the planner reads shapes, not values).
module {
  func.func @main(%arg0: tensor<2x?x1x28x28xf32>) -> tensor<?x10xf32> {
    %0 = snn.parameter "conv_fc.0.weight" = dense<1.000000e-01> : tensor<8x1x3x3xf32> loc("conv_fc.0.weight")
    %1 = snn.parameter "conv_fc.1.weight" = dense<1.000000e-01> : tensor<8xf32> loc("conv_fc.1.weight")
    %2 = snn.parameter "conv_fc.1.bias" = dense<1.000000e-01> : tensor<8xf32> loc("conv_fc.1.bias")
    %3 = snn.parameter "conv_fc.1.running_mean" buffer = dense<1.000000e-01> : tensor<8xf32> loc("conv_fc.1.running_mean")
    %4 = snn.parameter "conv_fc.1.running_var" buffer = dense<1.000000e-01> : tensor<8xf32> loc("conv_fc.1.running_var")
    %5 = snn.parameter "conv_fc.4.weight" = dense<1.000000e-01> : tensor<8x8x3x3xf32> loc("conv_fc.4.weight")
    %6 = snn.parameter "conv_fc.5.weight" = dense<1.000000e-01> : tensor<8xf32> loc("conv_fc.5.weight")
    %7 = snn.parameter "conv_fc.5.bias" = dense<1.000000e-01> : tensor<8xf32> loc("conv_fc.5.bias")
    %8 = snn.parameter "conv_fc.5.running_mean" buffer = dense<1.000000e-01> : tensor<8xf32> loc("conv_fc.5.running_mean")
    %9 = snn.parameter "conv_fc.5.running_var" buffer = dense<1.000000e-01> : tensor<8xf32> loc("conv_fc.5.running_var")
    %10 = snn.parameter "conv_fc.9.weight" = dense<1.000000e-01> : tensor<128x392xf32> loc("conv_fc.9.weight")
    %11 = snn.parameter "conv_fc.11.weight" = dense<1.000000e-01> : tensor<10x128xf32> loc("conv_fc.11.weight")
    %12 = snn.conv2d %arg0, %0 {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x?x1x28x28xf32>, tensor<8x1x3x3xf32>) -> tensor<2x?x8x28x28xf32> loc("conv_fc.0")
    %13 = snn.batch_norm %12, %1, %2, %3, %4 {eps = 9.99999974E-6 : f32, momentum = 1.000000e-01 : f32} : (tensor<2x?x8x28x28xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x?x8x28x28xf32> loc("conv_fc.1")
    %14 = snn.if_node %13 {alpha = 2.000000e+00 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, v_reset = 0.000000e+00 : f32, v_threshold = 1.000000e+00 : f32} : tensor<2x?x8x28x28xf32> loc("conv_fc.2")
    %15 = snn.max_pool2d %14 {ceil_mode = false, dilation = array<i64: 1, 1>, kernel_size = array<i64: 2, 2>, padding = array<i64: 0, 0>, stride = array<i64: 2, 2>} : (tensor<2x?x8x28x28xf32>) -> tensor<2x?x8x14x14xf32> loc("conv_fc.3")
    %16 = snn.conv2d %15, %5 {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x?x8x14x14xf32>, tensor<8x8x3x3xf32>) -> tensor<2x?x8x14x14xf32> loc("conv_fc.4")
    %17 = snn.batch_norm %16, %6, %7, %8, %9 {eps = 9.99999974E-6 : f32, momentum = 1.000000e-01 : f32} : (tensor<2x?x8x14x14xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x?x8x14x14xf32> loc("conv_fc.5")
    %18 = snn.if_node %17 {alpha = 2.000000e+00 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, v_reset = 0.000000e+00 : f32, v_threshold = 1.000000e+00 : f32} : tensor<2x?x8x14x14xf32> loc("conv_fc.6")
    %19 = snn.max_pool2d %18 {ceil_mode = false, dilation = array<i64: 1, 1>, kernel_size = array<i64: 2, 2>, padding = array<i64: 0, 0>, stride = array<i64: 2, 2>} : (tensor<2x?x8x14x14xf32>) -> tensor<2x?x8x7x7xf32> loc("conv_fc.7")
    %20 = snn.flatten %19 : (tensor<2x?x8x7x7xf32>) -> tensor<2x?x392xf32> loc("conv_fc.8")
    %21 = snn.linear %20, %10 : (tensor<2x?x392xf32>, tensor<128x392xf32>) -> tensor<2x?x128xf32> loc("conv_fc.9")
    %22 = snn.if_node %21 {alpha = 2.000000e+00 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, v_reset = 0.000000e+00 : f32, v_threshold = 1.000000e+00 : f32} : tensor<2x?x128xf32> loc("conv_fc.10")
    %23 = snn.linear %22, %11 : (tensor<2x?x128xf32>, tensor<10x128xf32>) -> tensor<2x?x10xf32> loc("conv_fc.11")
    %24 = snn.if_node %23 {alpha = 2.000000e+00 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, v_reset = 0.000000e+00 : f32, v_threshold = 1.000000e+00 : f32} : tensor<2x?x10xf32> loc("conv_fc.12")
    %25 = snn.mean_time %24 : (tensor<2x?x10xf32>) -> tensor<?x10xf32> loc("mean")
    return %25 : tensor<?x10xf32>
  }
}
