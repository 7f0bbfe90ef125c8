// snnexport.make_case --model spiking_mlp --width 8 --T 2, legalized by snn-compile;
// weights replaced by splats (the planner reads shapes, not values).
module {
  func.func @main(%arg0: tensor<2x?x784xf32>) -> tensor<2x?x10xf32> {
    %0 = snn.parameter "1.weight" = dense<1.000000e-01> : tensor<8x784xf32> loc("1.weight")
    %1 = snn.parameter "1.bias" = dense<1.000000e-01> : tensor<8xf32> loc("1.bias")
    %2 = snn.parameter "3.weight" = dense<1.000000e-01> : tensor<10x8xf32> loc("3.weight")
    %3 = snn.parameter "3.bias" = dense<1.000000e-01> : tensor<10xf32> loc("3.bias")
    %4 = snn.flatten %arg0 : (tensor<2x?x784xf32>) -> tensor<2x?x784xf32> loc("0")
    %5 = snn.linear %4, %0, %1 : (tensor<2x?x784xf32>, tensor<8x784xf32>, tensor<8xf32>) -> tensor<2x?x8xf32> loc("1")
    %6 = snn.lif_node %5 {alpha = 4.000000e+00 : f32, decay_input = true, detach_reset = false, surrogate = #snn<surrogate sigmoid>, tau = 2.000000e+00 : f32, v_reset = 0.000000e+00 : f32, v_threshold = 1.000000e+00 : f32} : tensor<2x?x8xf32> loc("2")
    %7 = snn.linear %6, %2, %3 : (tensor<2x?x8xf32>, tensor<10x8xf32>, tensor<10xf32>) -> tensor<2x?x10xf32> loc("3")
    %8 = snn.lif_node %7 {alpha = 4.000000e+00 : f32, decay_input = true, detach_reset = false, surrogate = #snn<surrogate sigmoid>, tau = 2.000000e+00 : f32, v_reset = 0.000000e+00 : f32, v_threshold = 1.000000e+00 : f32} : tensor<2x?x10xf32> loc("4")
    return %8 : tensor<2x?x10xf32>
  }
}
