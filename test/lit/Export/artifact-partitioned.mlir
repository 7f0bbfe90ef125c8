// A partitioned module (--snn-partition, --snn-insert-backward-collectives) exports one
// program per tp coordinate: program_<i>.onnx runs on every rank whose row-major mesh
// coordinate on tp is i. A sliced parameter is no node: program i holds part i of it under the
// parameter's name, and the manifest lists it "split" with its whole shape. The programs differ
// only in those initializers.
// RUN: rm -rf %t && mkdir -p %t
// RUN: snn-opt %s --snn-plan="topology=tp=2 batch-size=8 mode=tp" --snn-partition --snn-insert-backward-collectives --mlir-print-debuginfo -o %t/tp.mlir
// RUN: snn-translate --export-artifact %t/tp.mlir -o %t/tp
// RUN: FileCheck %s --check-prefix=TP --input-file=%t/tp/manifest.json
// RUN: %dump-onnx %t/tp/program_0.onnx | FileCheck %s --check-prefix=PROGRAM0
// RUN: %dump-onnx %t/tp/program_1.onnx | FileCheck %s --check-prefix=PROGRAM1
// The parts differ per rank and put back together are the whole parameters (0, 1, ..., 31).
// RUN: %python -c "import sys, onnx, numpy as np; from onnx.numpy_helper import to_array; p = [{t.name: to_array(t) for t in onnx.load(f).graph.initializer} for f in sys.argv[1:]]; assert not np.array_equal(p[0]['fc1.weight'], p[1]['fc1.weight']); assert (np.concatenate([p[0]['fc1.weight'], p[1]['fc1.weight']], 0).flatten() == np.arange(32)).all(); assert (np.concatenate([p[0]['fc2.weight'], p[1]['fc2.weight']], 1).flatten() == np.arange(32)).all(); assert (p[0]['fc2.bias'] == p[1]['fc2.bias']).all()" %t/tp/program_0.onnx %t/tp/program_1.onnx
// fsdp_tp on dp=2 x tp=2: the same two programs, each run by the two ranks of a tp coordinate
// (its dp group); the per-rank batch is 8 / 2.
// RUN: snn-opt %s --snn-plan="topology=dp=2,tp=2 batch-size=8 mode=fsdp_tp" --snn-partition --snn-insert-backward-collectives -o %t/fsdp_tp.mlir
// RUN: snn-translate --export-artifact %t/fsdp_tp.mlir -o %t/fsdp_tp
// RUN: FileCheck %s --check-prefix=FSDPTP --input-file=%t/fsdp_tp/manifest.json
// RUN: %dump-onnx %t/fsdp_tp/program_1.onnx | FileCheck %s --check-prefix=PROGRAM1

// Per training step and rank: fc2's forward all-reduce of [4, 8, 4] floats (512 bytes) and the
// backward all-reduce of sn1.w's gradient (4 bytes).
// TP:      "parameters": [
// TP-NEXT:   {
// TP-NEXT:     "kind": "parameter",
// TP-NEXT:     "mesh_axis": "tp",
// TP-NEXT:     "name": "fc1.weight",
// TP-NEXT:     "shape": [
// TP-NEXT:       8,
// TP-NEXT:       4
// TP-NEXT:     ],
// TP-NEXT:     "sharding": "split",
// TP-NEXT:     "split_dim": 0
// TP:          "name": "fc1.bias",
// TP:          "sharding": "split",
// TP-NEXT:     "split_dim": 0
// TP:          "name": "sn1.w",
// TP-NEXT:     "shape": [],
// TP-NEXT:     "sharding": "replicated"
// TP:          "mesh_axis": "tp",
// TP-NEXT:     "name": "fc2.weight",
// TP:          "sharding": "split",
// TP-NEXT:     "split_dim": 1
// TP:          "name": "fc2.bias",
// TP:          "sharding": "replicated"
// TP:        "plan": {
// TP-NEXT:     "batch_size": 8,
// TP-NEXT:     "communication": [
// TP-NEXT:       {
// TP-NEXT:         "bytes": 516,
// TP-NEXT:         "calls": 2,
// TP-NEXT:         "kind": "all_reduce",
// TP-NEXT:         "mesh_axis": "tp"
// TP-NEXT:       }
// TP-NEXT:     ],
// TP:          "mode": "tp",
// TP:          "partitioned": true,
// TP:        "programs": [
// TP-NEXT:     {
// TP-NEXT:       "file": "program_0.onnx",
// TP-NEXT:       "ranks": [
// TP-NEXT:         0
// TP-NEXT:       ]
// TP-NEXT:     },
// TP-NEXT:     {
// TP-NEXT:       "file": "program_1.onnx",
// TP-NEXT:       "ranks": [
// TP-NEXT:         1
// TP-NEXT:       ]
// TP-NEXT:     }
// TP-NEXT:   ],
// TP:        "world_size": 2

// Rank 0 holds rows 0-3 of fc1 and columns 0-3 of fc2; the collectives are nodes. Each
// program names the tp coordinate whose ranks run it.
// PROGRAM0:      metadata spikemesh.mesh_coordinate=tp=0
// PROGRAM0:      input input [4,N,4]
// PROGRAM0:      initializer fc1.weight [4, 4] [0.0, 1.0, 2.0, 3.0]
// PROGRAM0-NEXT: initializer fc1.bias [4] [0.0, 1.0, 2.0, 3.0]
// PROGRAM0-NEXT: initializer sn1.w [] [0.25]
// PROGRAM0-NEXT: initializer fc2.weight [4, 4] [0.0, 1.0, 2.0, 3.0]
// PROGRAM0-NEXT: initializer fc2.bias [4] [0.5, 1.5, 2.5, 3.5]
// PROGRAM0-NEXT: node 'sn1.w' spikemesh.backward_all_reduce(sn1.w) -> v0 {mesh_axis=b'tp'}
// PROGRAM0-NEXT: node 'fc1' spikemesh.linear(input, fc1.weight, fc1.bias) -> v1 {}
// PROGRAM0-NEXT: node 'sn1' spikemesh.plif_node(v1, v0) -> v2 {{.*}}
// PROGRAM0-NEXT: node 'fc2' spikemesh.linear(v2, fc2.weight) -> v3 {}
// PROGRAM0-NEXT: node 'fc2' spikemesh.all_reduce(v3) -> v4 {mesh_axis=b'tp'}
// PROGRAM0-NEXT: node 'fc2' spikemesh.bias_add(v4, fc2.bias) -> v5 {axis=2}
// PROGRAM0-NEXT: node 'sn2' spikemesh.if_node(v5) -> v6 {{.*}}
// PROGRAM0-NEXT: node 'readout' spikemesh.mean_time(v6) -> output {}

// Rank 1: rows 4-7 and columns 4-7.
// PROGRAM1:      metadata spikemesh.mesh_coordinate=tp=1
// PROGRAM1:      initializer fc1.weight [4, 4] [16.0, 17.0, 18.0, 19.0]
// PROGRAM1-NEXT: initializer fc1.bias [4] [4.0, 5.0, 6.0, 7.0]
// PROGRAM1-NEXT: initializer sn1.w [] [0.25]
// PROGRAM1-NEXT: initializer fc2.weight [4, 4] [4.0, 5.0, 6.0, 7.0]
// PROGRAM1-NEXT: initializer fc2.bias [4] [0.5, 1.5, 2.5, 3.5]

// FSDPTP:      "mesh": {
// FSDPTP-NEXT:   "axes": [
// FSDPTP-NEXT:     "dp",
// FSDPTP-NEXT:     "tp"
// FSDPTP:        "sharding": "split",
// FSDPTP:      "communication": [
// FSDPTP-NEXT:   {
// FSDPTP-NEXT:     "bytes": 260,
// FSDPTP-NEXT:     "calls": 2,
// FSDPTP-NEXT:     "kind": "all_reduce",
// FSDPTP-NEXT:     "mesh_axis": "tp"
// FSDPTP:        "mode": "fsdp_tp",
// FSDPTP:        "partitioned": true,
// FSDPTP:      "programs": [
// FSDPTP-NEXT:   {
// FSDPTP-NEXT:     "file": "program_0.onnx",
// FSDPTP-NEXT:     "ranks": [
// FSDPTP-NEXT:       0,
// FSDPTP-NEXT:       2
// FSDPTP-NEXT:     ]
// FSDPTP-NEXT:   },
// FSDPTP-NEXT:   {
// FSDPTP-NEXT:     "file": "program_1.onnx",
// FSDPTP-NEXT:     "ranks": [
// FSDPTP-NEXT:       1,
// FSDPTP-NEXT:       3
// FSDPTP-NEXT:     ]
// FSDPTP:      "world_size": 4

func.func @main(%x: tensor<4x?x4xf32>) -> tensor<?x4xf32> {
  %w1 = snn.parameter "fc1.weight" = dense<[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0], [16.0, 17.0, 18.0, 19.0], [20.0, 21.0, 22.0, 23.0], [24.0, 25.0, 26.0, 27.0], [28.0, 29.0, 30.0, 31.0]]> : tensor<8x4xf32>
  %b1 = snn.parameter "fc1.bias" = dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]> : tensor<8xf32>
  %pw = snn.parameter "sn1.w" = dense<0.25> : tensor<f32> loc("sn1.w")
  %w2 = snn.parameter "fc2.weight" = dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0], [24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0]]> : tensor<4x8xf32>
  %b2 = snn.parameter "fc2.bias" = dense<[0.5, 1.5, 2.5, 3.5]> : tensor<4xf32>
  %0 = snn.linear %x, %w1, %b1 : (tensor<4x?x4xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<4x?x8xf32> loc("fc1")
  %1 = snn.plif_node %0, %pw {v_threshold = 1.0 : f32, decay_input = true, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x8xf32>, tensor<f32> loc("sn1")
  %2 = snn.linear %1, %w2, %b2 : (tensor<4x?x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x?x4xf32> loc("fc2")
  %3 = snn.if_node %2 {v_threshold = 1.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<4x?x4xf32> loc("sn2")
  %4 = snn.mean_time %3 : (tensor<4x?x4xf32>) -> tensor<?x4xf32> loc("readout")
  return %4 : tensor<?x4xf32>
}
