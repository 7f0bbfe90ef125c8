// Head-parallel spiking attention: --snn-plan on tp relays the fused qkv
// projection out so that each rank's contiguous part holds whole heads (q, k and v of its own
// heads), and --snn-partition gives each rank the local block: the projection colwise, the
// attention over the rank's heads, the output projection rowwise, closed by an all-reduce.
// RUN: snn-opt %S/Inputs/attention_block.mlir --snn-plan="topology=tp=2 batch-size=8 mode=tp experimental-conv-tp" --snn-partition | FileCheck %s --check-prefix=TP2
// Heads that the tp size does not divide are refused, naming the attention.
// RUN: not snn-opt %S/Inputs/attention_block.mlir --snn-plan="topology=tp=4 batch-size=8 mode=tp experimental-conv-tp" 2>&1 | FileCheck %s --check-prefix=HEADS

// The qkv batch_norm's weight held each channel's index in SpikingJelly's (3, heads, D)
// order: q 0-7, k 8-15, v 16-23 (heads of 4 channels). Relaid out as (rank, 3, head, D):
// rank 0 holds q 0-3, k 8-11, v 16-19; rank 1 q 4-7, k 12-15, v 20-23. Every relaid
// parameter carries its three blocks for the manifest (split_groups).
// TP2-LABEL: func.func @main(%arg0: tensor<2x?x8x4xf32>) -> tensor<2x?x8xf32>
// TP2:       snn.parameter "attn.qkv_conv_bn.0.weight" = {{.*}} : tensor<24x8x1x1xf32> {snn.split_groups = 3 : i64}
// TP2:       snn.all_slice %{{.*}} over "tp" {axis = 0 : i64} : (tensor<24x8x1x1xf32>) -> tensor<12x8x1x1xf32>
// TP2:       snn.parameter "attn.qkv_conv_bn.1.weight" = dense<[0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00, 8.000000e+00, 9.000000e+00, 1.000000e+01, 1.100000e+01, 1.600000e+01, 1.700000e+01, 1.800000e+01, 1.900000e+01, 4.000000e+00, 5.000000e+00, 6.000000e+00, 7.000000e+00, 1.200000e+01, 1.300000e+01, 1.400000e+01, 1.500000e+01, 2.000000e+01, 2.100000e+01, 2.200000e+01, 2.300000e+01]> : tensor<24xf32> {snn.split_groups = 3 : i64}
// TP2:       snn.parameter "attn.qkv_conv_bn.1.running_var" buffer = {{.*}} {snn.split_groups = 3 : i64}
// The output projection splits its input channels (the rank's heads); its batch_norm is whole.
// TP2:       %[[WP:.*]] = snn.parameter "attn.proj_conv_bn.0.weight"
// TP2-NOT:   split_groups
// TP2-NEXT:  %[[WPL:.*]] = snn.all_slice %[[WP]] over "tp" {axis = 1 : i64} : (tensor<8x8x1x1xf32>) -> tensor<8x4x1x1xf32>
// TP2:       %[[QKV:.*]] = snn.conv2d %{{.*}} -> tensor<2x?x12x1x4xf32>
// TP2-NEXT:  %[[BN:.*]] = snn.batch_norm %[[QKV]], {{.*}} -> tensor<2x?x12x1x4xf32>
// TP2-NEXT:  %[[V:.*]] = snn.reshape %[[BN]] {shape = array<i64: 12, 4>} : (tensor<2x?x12x1x4xf32>) -> tensor<2x?x12x4xf32>
// TP2-NEXT:  %[[S:.*]] = snn.lif_node %[[V]] {{.*}} : tensor<2x?x12x4xf32>
// TP2-NEXT:  %[[A:.*]] = snn.spiking_attention %[[S]] {num_heads = 1 : i64, scale = 1.250000e-01 : f32} : (tensor<2x?x12x4xf32>) -> tensor<2x?x4x4xf32>
// TP2-NEXT:  %[[AS:.*]] = snn.lif_node %[[A]] {{.*}}v_threshold = 5.000000e-01 : f32} : tensor<2x?x4x4xf32>
// TP2-NEXT:  %[[AV:.*]] = snn.reshape %[[AS]] {shape = array<i64: 4, 1, 4>} : (tensor<2x?x4x4xf32>) -> tensor<2x?x4x1x4xf32>
// TP2-NEXT:  %[[P:.*]] = snn.conv2d %[[AV]], %[[WPL]] {{.*}} : (tensor<2x?x4x1x4xf32>, tensor<8x4x1x1xf32>) -> tensor<2x?x8x1x4xf32>
// TP2-NEXT:  %[[SUM:.*]] = snn.all_reduce %[[P]] over "tp" : (tensor<2x?x8x1x4xf32>) -> tensor<2x?x8x1x4xf32>
// TP2-NEXT:  snn.batch_norm %[[SUM]], {{.*}} -> tensor<2x?x8x1x4xf32>
// TP2:       snn.reduce_mean %{{.*}} {axes = array<i64: 3>, keepdims = false} : (tensor<2x?x8x4xf32>) -> tensor<2x?x8xf32>

// HEADS: error: loc("attn/attention"): cannot split 'attn/attention' (spiking_attention) over tp=4: its 2 heads are not divisible by 4 (each rank computes whole heads)
