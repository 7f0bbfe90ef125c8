// A planned module exports as one program (partitioning is a later pass): the plan goes
// into the manifest's "plan" (with "partitioned": false) and its mesh into "mesh"; shard annotations are looked through and snn.pp_stage is not exported.
// RUN: rm -rf %t && mkdir -p %t
// RUN: snn-opt %s --snn-plan="topology=dp=2,tp=2 batch-size=8 mode=fsdp_tp" --mlir-print-debuginfo -o %t/tp.mlir
// RUN: snn-translate --export-artifact %t/tp.mlir -o %t/tp
// RUN: FileCheck %s --check-prefix=MANIFEST --input-file=%t/tp/manifest.json
// RUN: %dump-onnx %t/tp/program_0.onnx | FileCheck %s --check-prefix=PROGRAM
// RUN: snn-opt %s --snn-plan="topology=pp=2 batch-size=8 mode=pp" --mlir-print-debuginfo -o %t/pp.mlir
// RUN: snn-translate --export-artifact %t/pp.mlir -o %t/pp
// RUN: %dump-onnx %t/pp/program_0.onnx | FileCheck %s --check-prefix=PROGRAM
// RUN: FileCheck %s --check-prefix=PPMANIFEST --input-file=%t/pp/manifest.json
// The data-parallel family runs the one program on every rank of its dp mesh: world_size is
// the dp size and program_0 serves ranks 0..N-1.
// RUN: snn-opt %s --snn-plan="topology=dp=4 batch-size=8 mode=dp" --mlir-print-debuginfo -o %t/dp.mlir
// RUN: snn-translate --export-artifact %t/dp.mlir -o %t/dp
// RUN: FileCheck %s --check-prefix=DPMANIFEST --input-file=%t/dp/manifest.json
// RUN: %dump-onnx %t/dp/program_0.onnx | FileCheck %s --check-prefix=PROGRAM
// RUN: snn-opt %s --snn-plan="topology=dp=2 batch-size=8 mode=fsdp" --mlir-print-debuginfo -o %t/fsdp.mlir
// RUN: snn-translate --export-artifact %t/fsdp.mlir -o %t/fsdp
// RUN: FileCheck %s --check-prefix=FSDPMANIFEST --input-file=%t/fsdp/manifest.json

// MANIFEST:      "explanation": {
// MANIFEST:        "candidates": [
// MANIFEST:        "topology": "dp=2,tp=2",
// MANIFEST:        "world_size": 4
// MANIFEST:      "mesh": {
// MANIFEST-NEXT:   "axes": [
// MANIFEST-NEXT:     "dp",
// MANIFEST-NEXT:     "tp"
// MANIFEST-NEXT:   ],
// MANIFEST-NEXT:   "shape": [
// MANIFEST-NEXT:     2,
// MANIFEST-NEXT:     2
// MANIFEST:      "sharding": "replicated"
// MANIFEST:      "plan": {
// MANIFEST:        "dp_mesh_dim": 0,
// MANIFEST:        "mode": "fsdp_tp",
// MANIFEST:        "optimizer_strategy": "none",
// MANIFEST:        "partitioned": false,
// MANIFEST:        "pp_microbatches": 0,
// MANIFEST:        "rationale": [
// MANIFEST:        "tp_mesh_dim": 1
// MANIFEST:      "programs": [
// MANIFEST-NEXT:   {
// MANIFEST-NEXT:     "file": "program_0.onnx",
// MANIFEST-NEXT:     "ranks": [
// MANIFEST-NEXT:       0
// MANIFEST:      "world_size": 1

// DPMANIFEST:      "mesh": {
// DPMANIFEST-NEXT:   "axes": [
// DPMANIFEST-NEXT:     "dp"
// DPMANIFEST-NEXT:   ],
// DPMANIFEST-NEXT:   "shape": [
// DPMANIFEST-NEXT:     4
// DPMANIFEST-NEXT:   ]
// DPMANIFEST:      "output": {
// DPMANIFEST:        "time_major": false
// DPMANIFEST:      "plan": {
// DPMANIFEST:        "mode": "dp",
// DPMANIFEST:        "partitioned": false,
// DPMANIFEST:      "programs": [
// DPMANIFEST-NEXT:   {
// DPMANIFEST-NEXT:     "file": "program_0.onnx",
// DPMANIFEST-NEXT:     "ranks": [
// DPMANIFEST-NEXT:       0,
// DPMANIFEST-NEXT:       1,
// DPMANIFEST-NEXT:       2,
// DPMANIFEST-NEXT:       3
// DPMANIFEST-NEXT:     ]
// DPMANIFEST:      "world_size": 4

// FSDPMANIFEST:      "mode": "fsdp",
// FSDPMANIFEST:      "ranks": [
// FSDPMANIFEST-NEXT:   0,
// FSDPMANIFEST-NEXT:   1
// FSDPMANIFEST-NEXT: ]
// FSDPMANIFEST:      "world_size": 2

// The same program as without a plan: no shard nodes, no planning attributes.
// PROGRAM:      node 'fc1' spikemesh.linear(input, fc1.weight, fc1.bias) -> v0 {}
// PROGRAM-NEXT: node 'sn1' spikemesh.lif_node(v0) -> v1 {alpha=4.0, decay_input=1, detach_reset=0, surrogate=b'sigmoid', tau=2.0, v_reset=0.0, v_threshold=1.0}
// PROGRAM-NEXT: node 'fc2' spikemesh.linear(v1, fc2.weight) -> v2 {}
// PROGRAM-NEXT: node 'readout' spikemesh.mean_time(v2) -> output {}

// PPMANIFEST: "mode": "pp",
// PPMANIFEST: "pp_layout": [
// PPMANIFEST-NEXT: 1,
// PPMANIFEST-NEXT: 2
// PPMANIFEST-NEXT: ],
// PPMANIFEST: "pp_schedule": "1f1b",

func.func @main(%x: tensor<4x?x16xf32>) -> tensor<?x4xf32> {
  %w1 = snn.parameter "fc1.weight" = dense<0.1> : tensor<8x16xf32>
  %b1 = snn.parameter "fc1.bias" = dense<0.0> : tensor<8xf32>
  %w2 = snn.parameter "fc2.weight" = dense<0.1> : tensor<4x8xf32>
  %0 = snn.linear %x, %w1, %b1 : (tensor<4x?x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<4x?x8xf32> loc("fc1")
  %1 = snn.lif_node %0 {tau = 2.0 : f32, decay_input = true, v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate sigmoid>, alpha = 4.0 : f32} : tensor<4x?x8xf32> loc("sn1")
  %2 = snn.linear %1, %w2 : (tensor<4x?x8xf32>, tensor<4x8xf32>) -> tensor<4x?x4xf32> loc("fc2")
  %3 = snn.mean_time %2 : (tensor<4x?x4xf32>) -> tensor<?x4xf32> loc("readout")
  return %3 : tensor<?x4xf32>
}
