// A pp module split by --snn-split-pipeline-stages exports one program per logical stage:
// program_<k>.onnx runs on every rank whose row-major pp coordinate is k mod the pp size, and
// each parameter lists the stage whose program holds it. A stage program has the graph input
// `input` (stage 0) or the graph output `output` (the last stage) or neither; `recv` nodes
// take no input and have value info with the shape (-1 for the batch), `send` nodes have no
// output (docs/artifact-format.md, "Pipeline programs").
// RUN: rm -rf %t && mkdir -p %t
// RUN: snn-opt %s --snn-plan="topology=pp=2 batch-size=8 mode=pp pp-layout=3|2 pp-schedule=1f1b" --snn-split-pipeline-stages --mlir-print-debuginfo -o %t/pp2.mlir
// RUN: snn-translate --export-artifact %t/pp2.mlir -o %t/pp2
// RUN: FileCheck %s --check-prefix=PP2 --input-file=%t/pp2/manifest.json
// RUN: %dump-onnx %t/pp2/program_0.onnx | FileCheck %s --check-prefix=STAGE0
// RUN: %dump-onnx %t/pp2/program_1.onnx | FileCheck %s --check-prefix=STAGE1
// RUN: ls %t/pp2 | FileCheck %s --check-prefix=FILES2
// Two virtual stages per rank: four programs, rank r runs stages r and r + 2.
// RUN: snn-opt %s --snn-plan="topology=pp=2,vpp=2 batch-size=8 mode=pp pp-layout=1|1|1|2" --snn-split-pipeline-stages -o %t/vpp.mlir
// RUN: snn-translate --export-artifact %t/vpp.mlir -o %t/vpp
// RUN: FileCheck %s --check-prefix=VPP --input-file=%t/vpp/manifest.json
// RUN: %dump-onnx %t/vpp/program_2.onnx | FileCheck %s --check-prefix=VPP2
// Each program's initializers are exactly the parameters the manifest puts in its stage, and
// each recv has the type of the matching send of the stage before.
// RUN: %check-pipeline %t/pp2 %t/vpp

// Units fc1 | sn1 | fc2 | sn2 (+ add) | fc3 (+ readout). The shortcut `sn1` -> `add` crosses
// the boundary of the 3|2 layout with fc2's output: stage 0 sends both (slots in definition
// order: sn1, then fc2), stage 1 receives both.
// PP2:      "input": {
// PP2-NEXT:   "name": "input",
// PP2-NEXT:   "shape": [
// PP2-NEXT:     4,
// PP2-NEXT:     -1,
// PP2-NEXT:     16
// PP2:      "output": {
// PP2-NEXT:   "name": "output",
// PP2-NEXT:   "shape": [
// PP2-NEXT:     -1,
// PP2-NEXT:     4
// PP2-NEXT:   ],
// PP2-NEXT:   "time_major": false
// PP2:      "parameters": [
// PP2-NEXT:   {
// PP2-NEXT:     "kind": "parameter",
// PP2-NEXT:     "name": "fc1.weight",
// PP2:          "sharding": "replicated",
// PP2-NEXT:     "stage": 0
// PP2:          "name": "fc1.bias",
// PP2:          "stage": 0
// PP2:          "name": "fc2.weight",
// PP2:          "stage": 0
// PP2:          "name": "fc3.weight",
// PP2:          "stage": 1
// PP2:      "plan": {
// PP2:        "mode": "pp",
// PP2:        "partitioned": false,
// PP2:        "pp_layout": [
// PP2-NEXT:     3,
// PP2-NEXT:     2
// PP2-NEXT:   ],
// PP2:        "pp_mesh_dim": 0,
// PP2:        "pp_schedule": "1f1b",
// PP2:      "programs": [
// PP2-NEXT:   {
// PP2-NEXT:     "file": "program_0.onnx",
// PP2-NEXT:     "ranks": [
// PP2-NEXT:       0
// PP2-NEXT:     ],
// PP2-NEXT:     "stage": 0
// PP2-NEXT:   },
// PP2-NEXT:   {
// PP2-NEXT:     "file": "program_1.onnx",
// PP2-NEXT:     "ranks": [
// PP2-NEXT:       1
// PP2-NEXT:     ],
// PP2-NEXT:     "stage": 1
// PP2-NEXT:   }
// PP2-NEXT: ],
// PP2:      "world_size": 2

// Each stage program names the pp coordinate that runs it (stage k: k mod the pp size).
// STAGE0:      opset spikemesh 1
// STAGE0-NEXT: metadata spikemesh.mesh_coordinate=pp=0
// STAGE0-NEXT: input input [4,N,16]
// STAGE0-NOT:  output
// STAGE0-NOT:  value_info
// STAGE0:      initializer fc1.weight [8, 16]
// STAGE0-NEXT: initializer fc1.bias [8]
// STAGE0-NEXT: initializer fc2.weight [8, 8]
// STAGE0-NOT:  initializer
// STAGE0:      node 'fc1' spikemesh.linear(input, fc1.weight, fc1.bias) -> v0 {}
// STAGE0-NEXT: node 'sn1' spikemesh.lif_node(v0) -> v1
// STAGE0-NEXT: node 'fc2' spikemesh.linear(v1, fc2.weight) -> v2 {}
// STAGE0-NEXT: node 'sn1' spikemesh.send(v1) ->  {peer=1, slot=0}
// STAGE0-NEXT: node 'fc2' spikemesh.send(v2) ->  {peer=1, slot=1}
// STAGE0-NOT:  node

// STAGE1:      opset spikemesh 1
// STAGE1-NEXT: metadata spikemesh.mesh_coordinate=pp=1
// STAGE1-NOT:  input
// STAGE1-NEXT: output output [N,4]
// STAGE1-NEXT: value_info v0 [4,-1,8]
// STAGE1-NEXT: value_info v1 [4,-1,8]
// STAGE1-NEXT: initializer fc3.weight [4, 8]
// STAGE1-NEXT: node 'sn1' spikemesh.recv() -> v0 {peer=0, slot=0}
// STAGE1-NEXT: node 'fc2' spikemesh.recv() -> v1 {peer=0, slot=1}
// STAGE1-NEXT: node 'sn2' spikemesh.if_node(v1) -> v2
// STAGE1-NEXT: node 'add' spikemesh.add(v2, v0) -> v3 {}
// STAGE1-NEXT: node 'fc3' spikemesh.linear(v3, fc3.weight) -> v4 {}
// STAGE1-NEXT: node 'readout' spikemesh.mean_time(v4) -> output {}

// VPP:      "pp_virtual_stages": 2
// VPP:      "programs": [
// VPP-NEXT:   {
// VPP-NEXT:     "file": "program_0.onnx",
// VPP-NEXT:     "ranks": [
// VPP-NEXT:       0
// VPP-NEXT:     ],
// VPP-NEXT:     "stage": 0
// VPP:          "file": "program_1.onnx",
// VPP-NEXT:     "ranks": [
// VPP-NEXT:       1
// VPP-NEXT:     ],
// VPP-NEXT:     "stage": 1
// VPP:          "file": "program_2.onnx",
// VPP-NEXT:     "ranks": [
// VPP-NEXT:       0
// VPP-NEXT:     ],
// VPP-NEXT:     "stage": 2
// VPP:          "file": "program_3.onnx",
// VPP-NEXT:     "ranks": [
// VPP-NEXT:       1
// VPP-NEXT:     ],
// VPP-NEXT:     "stage": 3
// VPP:      "world_size": 2

// Layout 1|1|1|2: stage 2 is fc2 alone; the shortcut passes through it, received and sent on.
// VPP2:      metadata spikemesh.mesh_coordinate=pp=0
// VPP2-NOT:  input
// VPP2-NOT:  output
// VPP2:      value_info v0 [4,-1,8]
// VPP2-NOT:  value_info
// VPP2:      initializer fc2.weight [8, 8]
// VPP2-NEXT: spikemesh.recv() -> v0 {peer=1, slot=0}
// VPP2-NEXT: spikemesh.linear(v0, fc2.weight) -> v1
// VPP2-NEXT: spikemesh.send(v0) ->  {peer=3, slot=0}
// VPP2-NEXT: spikemesh.send(v1) ->  {peer=3, slot=1}
// VPP2-NOT:  node

// FILES2:      manifest.json
// FILES2-NEXT: program_0.onnx
// FILES2-NEXT: program_1.onnx
// FILES2-NOT:  program_2

func.func @main(%x: tensor<4x?x16xf32>) -> tensor<?x4xf32> {
  %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x16xf32> loc("fc1.weight")
  %b1 = snn.parameter "fc1.bias" = dense<0.0> : tensor<8xf32> loc("fc1.bias")
  %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<8x8xf32> loc("fc2.weight")
  %w3 = snn.parameter "fc3.weight" = dense<0.1> : tensor<4x8xf32> loc("fc3.weight")
  %0 = snn.linear %x, %w1, %b1 : (tensor<4x?x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<4x?x8xf32> loc("fc1")
  %1 = snn.lif_node %0 {tau = 2.0 : f32, decay_input = true, v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x?x8xf32> loc("sn1")
  %2 = snn.linear %1, %w2 : (tensor<4x?x8xf32>, tensor<8x8xf32>) -> tensor<4x?x8xf32> loc("fc2")
  %3 = snn.if_node %2 {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x8xf32> loc("sn2")
  %4 = snn.add %3, %1 : tensor<4x?x8xf32> loc("add")
  %5 = snn.linear %4, %w3 : (tensor<4x?x8xf32>, tensor<4x8xf32>) -> tensor<4x?x4xf32> loc("fc3")
  %6 = snn.mean_time %5 : (tensor<4x?x4xf32>) -> tensor<?x4xf32> loc("readout")
  return %6 : tensor<?x4xf32>
}
