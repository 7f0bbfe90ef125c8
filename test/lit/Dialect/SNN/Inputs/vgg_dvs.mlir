// snnexport.make_case --model vgg_dvs --width 8 --T 2 --image 16 --blocks 2, legalized by snn-compile;
// weights replaced by splats (the planner reads shapes, not values).
module {
  func.func @main(%arg0: tensor<2x?x2x16x16xf32>) -> tensor<?x10xf32> {
    %0 = snn.parameter "features.0.weight" = dense<1.000000e-01> : tensor<8x2x3x3xf32> loc("features.0.weight")
    %1 = snn.parameter "features.1.weight" = dense<1.000000e-01> : tensor<8xf32> loc("features.1.weight")
    %2 = snn.parameter "features.1.bias" = dense<1.000000e-01> : tensor<8xf32> loc("features.1.bias")
    %3 = snn.parameter "features.1.running_mean" buffer = dense<1.000000e-01> : tensor<8xf32> loc("features.1.running_mean")
    %4 = snn.parameter "features.1.running_var" buffer = dense<1.000000e-01> : tensor<8xf32> loc("features.1.running_var")
    %5 = snn.parameter "features.4.weight" = dense<1.000000e-01> : tensor<8x8x3x3xf32> loc("features.4.weight")
    %6 = snn.parameter "features.5.weight" = dense<1.000000e-01> : tensor<8xf32> loc("features.5.weight")
    %7 = snn.parameter "features.5.bias" = dense<1.000000e-01> : tensor<8xf32> loc("features.5.bias")
    %8 = snn.parameter "features.5.running_mean" buffer = dense<1.000000e-01> : tensor<8xf32> loc("features.5.running_mean")
    %9 = snn.parameter "features.5.running_var" buffer = dense<1.000000e-01> : tensor<8xf32> loc("features.5.running_var")
    %10 = snn.parameter "classifier.2.weight" = dense<1.000000e-01> : tensor<10x128xf32> loc("classifier.2.weight")
    %11 = snn.parameter "classifier.2.bias" = dense<1.000000e-01> : tensor<10xf32> loc("classifier.2.bias")
    %12 = snn.conv2d %arg0, %0 {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x?x2x16x16xf32>, tensor<8x2x3x3xf32>) -> tensor<2x?x8x16x16xf32> loc("features.0")
    %13 = snn.batch_norm %12, %1, %2, %3, %4 {eps = 9.99999974E-6 : f32, momentum = 1.000000e-01 : f32} : (tensor<2x?x8x16x16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x?x8x16x16xf32> loc("features.1")
    %14 = snn.lif_node %13 {alpha = 2.000000e+00 : f32, decay_input = false, detach_reset = true, surrogate = #snn<surrogate atan>, tau = 1.333000e+00 : f32, v_reset = 0.000000e+00 : f32, v_threshold = 1.000000e+00 : f32} : tensor<2x?x8x16x16xf32> loc("features.2")
    %15 = snn.max_pool2d %14 {ceil_mode = false, dilation = array<i64: 1, 1>, kernel_size = array<i64: 2, 2>, padding = array<i64: 0, 0>, stride = array<i64: 2, 2>} : (tensor<2x?x8x16x16xf32>) -> tensor<2x?x8x8x8xf32> loc("features.3")
    %16 = snn.conv2d %15, %5 {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x?x8x8x8xf32>, tensor<8x8x3x3xf32>) -> tensor<2x?x8x8x8xf32> loc("features.4")
    %17 = snn.batch_norm %16, %6, %7, %8, %9 {eps = 9.99999974E-6 : f32, momentum = 1.000000e-01 : f32} : (tensor<2x?x8x8x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x?x8x8x8xf32> loc("features.5")
    %18 = snn.lif_node %17 {alpha = 2.000000e+00 : f32, decay_input = false, detach_reset = true, surrogate = #snn<surrogate atan>, tau = 1.333000e+00 : f32, v_reset = 0.000000e+00 : f32, v_threshold = 1.000000e+00 : f32} : tensor<2x?x8x8x8xf32> loc("features.6")
    %19 = snn.max_pool2d %18 {ceil_mode = false, dilation = array<i64: 1, 1>, kernel_size = array<i64: 2, 2>, padding = array<i64: 0, 0>, stride = array<i64: 2, 2>} : (tensor<2x?x8x8x8xf32>) -> tensor<2x?x8x4x4xf32> loc("features.7")
    %20 = snn.flatten %19 : (tensor<2x?x8x4x4xf32>) -> tensor<2x?x128xf32> loc("classifier.0")
    %21 = snn.dropout %20 {p = 5.000000e-01 : f32} : (tensor<2x?x128xf32>) -> tensor<2x?x128xf32> loc("classifier.1")
    %22 = snn.linear %21, %10, %11 : (tensor<2x?x128xf32>, tensor<10x128xf32>, tensor<10xf32>) -> tensor<2x?x10xf32> loc("classifier.2")
    %23 = snn.lif_node %22 {alpha = 2.000000e+00 : f32, decay_input = false, detach_reset = true, surrogate = #snn<surrogate atan>, tau = 1.333000e+00 : f32, v_reset = 0.000000e+00 : f32, v_threshold = 1.000000e+00 : f32} : tensor<2x?x10xf32> loc("classifier.3")
    %24 = snn.mean_time %23 : (tensor<2x?x10xf32>) -> tensor<?x10xf32> loc("mean")
    return %24 : tensor<?x10xf32>
  }
}
