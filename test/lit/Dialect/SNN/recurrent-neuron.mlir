// RUN: snn-opt %s -split-input-file | snn-opt -split-input-file | FileCheck %s
// RUN: snn-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(sharding-propagation,shard-partition))' | FileCheck %s --check-prefix=PART
// A described neuron fed back its own output through a Linear: round trip, and under a
// batch split its weight, bias and operands stay whole while x and the result split on N.

// CHECK-LABEL: func.func @cuba_lif
func.func @cuba_lif(%x: tensor<4x2x3xf32>, %w: tensor<3x3xf32>, %b: tensor<3xf32>) -> tensor<4x2x3xf32> {
  // CHECK: snn.recurrent_neuron %{{.*}}, %{{.*}}, %{{.*}} {{{.*}}charge = ["i = i + (w_in * x - i) / tau_syn", "h = v + (r * i - (v - v_leak)) / tau"]{{.*}}} : tensor<4x2x3xf32>, tensor<3x3xf32>, tensor<3xf32>
  %0 = snn.recurrent_neuron %x, %w, %b {states = ["v=0", "i=0"], constants = ["tau_syn=2", "w_in=1", "tau=4", "r=2", "v_leak=0", "v_threshold=1", "v_reset=0"], operand_names = [], charge = ["i = i + (w_in * x - i) / tau_syn", "h = v + (r * i - (v - v_leak)) / tau"], fire = "h - v_threshold", reset = "hard", detach_reset = false, update = [], output = "s", surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x2x3xf32>, tensor<3x3xf32>, tensor<3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

// CHECK-LABEL: func.func @per_feature
func.func @per_feature(%x: tensor<4x2x3xf32>, %w: tensor<3x3xf32>, %b: tensor<3xf32>, %tau: tensor<3xf32>) -> tensor<4x2x3xf32> {
  // CHECK: snn.recurrent_neuron %{{.*}}, %{{.*}}, %{{.*}}(%{{.*}} : tensor<3xf32>) {{{.*}}operand_names = ["tau"]
  %0 = snn.recurrent_neuron %x, %w, %b(%tau : tensor<3xf32>) {states = ["v=0"], constants = ["v_threshold=1", "v_reset=0"], operand_names = ["tau"], charge = ["h = v + (x - (v - v_reset)) / tau"], fire = "h - v_threshold", reset = "hard", detach_reset = false, update = [], output = "s", surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x2x3xf32>, tensor<3x3xf32>, tensor<3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

shard.grid @grid(shape = 2)
// PART-LABEL: func.func @batch_split
// PART-SAME: %[[X:.*]]: tensor<4x1x3xf32>, %[[W:.*]]: tensor<3x3xf32>, %[[B:.*]]: tensor<3xf32>
// PART: snn.recurrent_neuron %[[X]], %[[W]], %[[B]] {{.*}} : tensor<4x1x3xf32>, tensor<3x3xf32>, tensor<3xf32>
func.func @batch_split(%x: tensor<4x2x3xf32>, %w: tensor<3x3xf32>, %b: tensor<3xf32>) -> tensor<4x2x3xf32> {
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<4x2x3xf32>
  %0 = snn.recurrent_neuron %xs, %w, %b {states = ["v=0"], constants = ["tau=2", "v_threshold=1", "v_reset=0"], operand_names = [], charge = ["h = v + (x - (v - v_reset)) / tau"], fire = "h - v_threshold", reset = "hard", detach_reset = false, update = [], output = "s", surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x2x3xf32>, tensor<3x3xf32>, tensor<3xf32>
  %r = shard.shard %0 to %s : tensor<4x2x3xf32>
  return %r : tensor<4x2x3xf32>
}
