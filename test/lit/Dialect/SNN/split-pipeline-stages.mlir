// --snn-split-pipeline-stages: a pp plan's @main -> one function per logical stage, with
// snn.send / snn.recv on every boundary a value crosses (only adjacent stages talk). The MLPs
// are planned with forced modes and layouts, so the checks do not depend on the cost model.
// RUN: split-file %s %t
// RUN: snn-opt %t/mlp.mlir --snn-plan="topology=pp=2 batch-size=8 mode=pp pp-layout=2|2 pp-schedule=1f1b" --snn-split-pipeline-stages | FileCheck %s --check-prefix=TWO
// RUN: snn-opt %t/mlp.mlir --snn-plan="topology=pp=4 batch-size=8 mode=pp" --snn-split-pipeline-stages | FileCheck %s --check-prefixes=FOUR,SPLIT
// Two virtual stages per rank on pp=2: four stage functions, the same as pp=4.
// RUN: snn-opt %t/mlp.mlir --snn-plan="topology=pp=2,vpp=2 batch-size=8 mode=pp" --snn-split-pipeline-stages | FileCheck %s --check-prefixes=FOUR,VIRTUAL
// A shortcut over two boundaries is received and sent on by the stage in between.
// RUN: snn-opt %t/residual.mlir --snn-plan="topology=pp=4 batch-size=8 mode=pp pp-schedule=1f1b pp-layout=1|1|1|1" --snn-split-pipeline-stages | FileCheck %s --check-prefix=RES
// @main's input read by a later stage is sent on like any value (slot 0: arguments come first).
// RUN: snn-opt %t/input_skip.mlir --snn-plan="topology=pp=3 batch-size=8 mode=pp pp-schedule=1f1b pp-layout=1|1|1" --snn-split-pipeline-stages | FileCheck %s --check-prefix=INPUT
// Other modes, an unplanned module and a second run are left as they are.
// RUN: snn-opt %t/mlp.mlir --snn-plan="topology=dp=2 batch-size=8 mode=dp" --snn-split-pipeline-stages | FileCheck %s --check-prefix=DP
// RUN: snn-opt %t/mlp.mlir --snn-split-pipeline-stages | FileCheck %s --check-prefix=DP
// RUN: snn-opt %t/mlp.mlir --snn-plan="topology=pp=2 batch-size=8 mode=pp" --snn-split-pipeline-stages -o %t/once.mlir
// RUN: snn-opt %t/once.mlir --snn-split-pipeline-stages -o %t/twice.mlir
// RUN: diff %t/once.mlir %t/twice.mlir

// TWO-LABEL: module attributes
// TWO-SAME:  pp_layout = [2, 2]
// TWO-NOT:   shard.
// TWO-NOT:   func.func @main
// TWO-LABEL: func.func @stage_0(%arg0: tensor<4x?x16xf32>) attributes {snn.pp_stage = 0 : i64} {
// TWO-NEXT:  %[[W1:.*]] = snn.parameter "fc1.weight"
// TWO-NEXT:  %[[B1:.*]] = snn.parameter "fc1.bias"
// TWO-NEXT:  %[[FC1:.*]] = snn.linear %arg0, %[[W1]], %[[B1]]
// TWO-NEXT:  %[[SN1:.*]] = snn.lif_node %[[FC1]]
// TWO-NOT:   snn.pp_stage
// TWO-NEXT:  snn.send %[[SN1]] to stage 1 slot 0 : tensor<4x?x8xf32>
// TWO-NEXT:  return{{$}}
// TWO-LABEL: func.func @stage_1() -> tensor<?x4xf32> attributes {snn.pp_stage = 1 : i64} {
// TWO-NEXT:  %[[IN:.*]] = snn.recv from stage 0 slot 0 : tensor<4x?x8xf32>
// TWO-NEXT:  %[[W2:.*]] = snn.parameter "fc2.weight"
// TWO-NEXT:  %[[B2:.*]] = snn.parameter "fc2.bias"
// TWO-NEXT:  %[[FC2:.*]] = snn.linear %[[IN]], %[[W2]], %[[B2]]
// TWO-NEXT:  %[[SN2:.*]] = snn.if_node %[[FC2]]
// TWO-NEXT:  %[[OUT:.*]] = snn.mean_time %[[SN2]]
// TWO-NEXT:  return %[[OUT]] : tensor<?x4xf32>
// TWO-NOT:   func.func

// One unit per stage: fc1 | sn1 | fc2 | sn2 + readout.
// SPLIT:       pp_layout = [1, 1, 1, 1]
// VIRTUAL:     pp_schedule = interleaved_1f1b, pp_virtual_stages = 2, pp_layout = [1, 1, 1, 1]
// FOUR-LABEL:  func.func @stage_0(%arg0: tensor<4x?x16xf32>) attributes {snn.pp_stage = 0 : i64} {
// FOUR:        %[[FC1:.*]] = snn.linear %arg0
// FOUR-NEXT:   snn.send %[[FC1]] to stage 1 slot 0 : tensor<4x?x8xf32>
// FOUR-NEXT:   return{{$}}
// FOUR-LABEL:  func.func @stage_1() attributes {snn.pp_stage = 1 : i64} {
// FOUR-NEXT:   %[[IN1:.*]] = snn.recv from stage 0 slot 0 : tensor<4x?x8xf32>
// FOUR-NEXT:   %[[SN1:.*]] = snn.lif_node %[[IN1]]
// FOUR-NEXT:   snn.send %[[SN1]] to stage 2 slot 0 : tensor<4x?x8xf32>
// FOUR-NEXT:   return{{$}}
// FOUR-LABEL:  func.func @stage_2() attributes {snn.pp_stage = 2 : i64} {
// FOUR-NEXT:   %[[IN2:.*]] = snn.recv from stage 1 slot 0 : tensor<4x?x8xf32>
// FOUR-NEXT:   snn.parameter "fc2.weight"
// FOUR-NEXT:   snn.parameter "fc2.bias"
// FOUR-NEXT:   %[[FC2:.*]] = snn.linear %[[IN2]]
// FOUR-NEXT:   snn.send %[[FC2]] to stage 3 slot 0 : tensor<4x?x4xf32>
// FOUR-NEXT:   return{{$}}
// FOUR-LABEL:  func.func @stage_3() -> tensor<?x4xf32> attributes {snn.pp_stage = 3 : i64} {
// FOUR-NEXT:   %[[IN3:.*]] = snn.recv from stage 2 slot 0 : tensor<4x?x4xf32>
// FOUR-NEXT:   %[[SN2:.*]] = snn.if_node %[[IN3]]
// FOUR-NEXT:   %[[OUT:.*]] = snn.mean_time %[[SN2]]
// FOUR-NEXT:   return %[[OUT]] : tensor<?x4xf32>

// Units stem | block1 | block2 (+ the add, a functional op) | head. The stem's output feeds
// block1 and the add in stage 2: it crosses edges 0-1 and 1-2, and stage 1 sends it on. On
// edge 1-2 it is slot 0 (defined first), block1's output slot 1.
// RES:       pp_layout = [1, 1, 1, 1]
// RES-LABEL: func.func @stage_0(%arg0: tensor<2x?x8xf32>) attributes {snn.pp_stage = 0 : i64} {
// RES:       %[[STEM:.*]] = snn.if_node
// RES-NEXT:  snn.send %[[STEM]] to stage 1 slot 0 : tensor<2x?x8xf32>
// RES-NEXT:  return{{$}}
// RES-LABEL: func.func @stage_1() attributes {snn.pp_stage = 1 : i64} {
// RES-NEXT:  %[[S1:.*]] = snn.recv from stage 0 slot 0 : tensor<2x?x8xf32>
// RES:       %[[FC1:.*]] = snn.linear %[[S1]]
// RES-NEXT:  %[[SN1:.*]] = snn.if_node %[[FC1]]
// RES-NEXT:  snn.send %[[S1]] to stage 2 slot 0 : tensor<2x?x8xf32>
// RES-NEXT:  snn.send %[[SN1]] to stage 2 slot 1 : tensor<2x?x8xf32>
// RES-NEXT:  return{{$}}
// RES-LABEL: func.func @stage_2() attributes {snn.pp_stage = 2 : i64} {
// RES-NEXT:  %[[S2:.*]] = snn.recv from stage 1 slot 0 : tensor<2x?x8xf32>
// RES-NEXT:  %[[B1:.*]] = snn.recv from stage 1 slot 1 : tensor<2x?x8xf32>
// RES:       %[[FC2:.*]] = snn.linear %[[B1]]
// RES-NEXT:  %[[SN2:.*]] = snn.if_node %[[FC2]]
// RES-NEXT:  %[[SUM:.*]] = snn.add %[[SN2]], %[[S2]]
// RES-NEXT:  snn.send %[[SUM]] to stage 3 slot 0 : tensor<2x?x8xf32>
// RES-NEXT:  return{{$}}
// RES-LABEL: func.func @stage_3() -> tensor<?x4xf32> attributes {snn.pp_stage = 3 : i64} {
// RES-NEXT:  %[[IN3:.*]] = snn.recv from stage 2 slot 0 : tensor<2x?x8xf32>
// RES:       snn.linear %[[IN3]]
// RES:       snn.mean_time
// RES-NEXT:  return

// Units stem | block (+ the add) | head.
// INPUT:       pp_layout = [1, 1, 1]
// INPUT-LABEL: func.func @stage_0(%arg0: tensor<2x?x8xf32>) attributes {snn.pp_stage = 0 : i64} {
// INPUT:       %[[STEM:.*]] = snn.if_node
// INPUT-NEXT:  snn.send %arg0 to stage 1 slot 0 : tensor<2x?x8xf32>
// INPUT-NEXT:  snn.send %[[STEM]] to stage 1 slot 1 : tensor<2x?x8xf32>
// INPUT-LABEL: func.func @stage_1() attributes {snn.pp_stage = 1 : i64} {
// INPUT-NEXT:  %[[X:.*]] = snn.recv from stage 0 slot 0 : tensor<2x?x8xf32>
// INPUT-NEXT:  %[[S:.*]] = snn.recv from stage 0 slot 1 : tensor<2x?x8xf32>
// INPUT:       %[[FC:.*]] = snn.linear %[[S]]
// INPUT-NEXT:  %[[SN:.*]] = snn.if_node %[[FC]]
// INPUT-NEXT:  %[[SUM:.*]] = snn.add %[[SN]], %[[X]]
// INPUT-NEXT:  snn.send %[[SUM]] to stage 2 slot 0 : tensor<2x?x8xf32>
// INPUT-LABEL: func.func @stage_2() -> tensor<?x4xf32> attributes {snn.pp_stage = 2 : i64} {

// DP-NOT: @stage_
// DP:     func.func @main
// DP-NOT: snn.send
// DP-NOT: @stage_

//--- mlp.mlir
func.func @main(%x: tensor<4x?x16xf32>) -> tensor<?x4xf32> {
  %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x16xf32> loc("fc1.weight")
  %b1 = snn.parameter "fc1.bias" = dense<0.0> : tensor<8xf32> loc("fc1.bias")
  %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32> loc("fc2.weight")
  %b2 = snn.parameter "fc2.bias" = dense<0.0> : tensor<4xf32> loc("fc2.bias")
  %0 = snn.linear %x, %w1, %b1 : (tensor<4x?x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<4x?x8xf32> loc("fc1")
  %1 = snn.lif_node %0 {tau = 2.0 : f32, decay_input = true, v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x?x8xf32> loc("sn1")
  %2 = snn.linear %1, %w2, %b2 : (tensor<4x?x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x?x4xf32> loc("fc2")
  %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x4xf32> loc("sn2")
  %4 = snn.mean_time %3 : (tensor<4x?x4xf32>) -> tensor<?x4xf32> loc("readout")
  return %4 : tensor<?x4xf32>
}

//--- residual.mlir
func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
  %w0 = snn.parameter "stem.0.weight" = dense<0.1> : tensor<8x8xf32>
  %w1 = snn.parameter "block1.0.weight" = dense<0.1> : tensor<8x8xf32>
  %w2 = snn.parameter "block2.0.weight" = dense<0.1> : tensor<8x8xf32>
  %w3 = snn.parameter "head.0.weight" = dense<0.1> : tensor<4x8xf32>
  %0 = snn.linear %x, %w0 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("stem.0")
  %1 = snn.if_node %0 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("stem.1")
  %2 = snn.linear %1, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("block1.0")
  %3 = snn.if_node %2 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("block1.1")
  %4 = snn.linear %3, %w2 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("block2.0")
  %5 = snn.if_node %4 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("block2.1")
  %6 = snn.add %5, %1 : tensor<2x?x8xf32> loc("add")
  %7 = snn.linear %6, %w3 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("head.0")
  %8 = snn.if_node %7 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("head.1")
  %9 = snn.mean_time %8 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
  return %9 : tensor<?x4xf32>
}

//--- input_skip.mlir
func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x4xf32> {
  %w0 = snn.parameter "stem.0.weight" = dense<0.1> : tensor<8x8xf32>
  %w1 = snn.parameter "block.0.weight" = dense<0.1> : tensor<8x8xf32>
  %w2 = snn.parameter "head.0.weight" = dense<0.1> : tensor<4x8xf32>
  %0 = snn.linear %x, %w0 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("stem.0")
  %1 = snn.if_node %0 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("stem.1")
  %2 = snn.linear %1, %w1 : (tensor<2x?x8xf32>, tensor<8x8xf32>) -> tensor<2x?x8xf32> loc("block.0")
  %3 = snn.if_node %2 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x8xf32> loc("block.1")
  %4 = snn.add %3, %x : tensor<2x?x8xf32> loc("add")
  %5 = snn.linear %4, %w2 : (tensor<2x?x8xf32>, tensor<4x8xf32>) -> tensor<2x?x4xf32> loc("head.0")
  %6 = snn.mean_time %5 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
  return %6 : tensor<?x4xf32>
}
