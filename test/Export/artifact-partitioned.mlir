// A partitioned (per-rank) program, as upstream's --shard-partition makes from a tp plan, holds
// collectives; nothing runs one yet, so the export refuses it rather than skip the collective.
// RUN: rm -rf %t && snn-translate --export-artifact %s -o %t/art --verify-diagnostics
// RUN: not test -e %t/art

shard.grid @mesh(shape = 2)
func.func @main(%x: tensor<4x?x4xf32>) -> tensor<4x?x4xf32> {
  %w = snn.parameter "fc.weight" = dense<0.1> : tensor<4x8xf32>
  // expected-error @below {{cannot export 'shard.all_slice': partitioned (per-rank) programs cannot be exported yet}}
  %ws = shard.all_slice %w on @mesh grid_axes = [0] slice_axis = 1 : tensor<4x8xf32> -> tensor<4x4xf32>
  %0 = snn.linear %x, %ws : (tensor<4x?x4xf32>, tensor<4x4xf32>) -> tensor<4x?x4xf32>
  %1 = shard.all_reduce %0 on @mesh grid_axes = [0] : tensor<4x?x4xf32> -> tensor<4x?x4xf32>
  return %1 : tensor<4x?x4xf32>
}
