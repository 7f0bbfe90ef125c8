// A planned module of the data-parallel family exports as one program that every rank of its
// dp mesh runs: the plan goes into the manifest's "plan" (with "partitioned": false), its
// request and candidates into "explanation", its mesh into "mesh"; shard annotations are looked
// through. world_size is the dp size and program_0 serves ranks 0..N-1.
// RUN: rm -rf %t && mkdir -p %t
// RUN: snn-opt %s --snn-plan="topology=dp=4 batch-size=8 mode=dp" --mlir-print-debuginfo -o %t/dp.mlir
// RUN: snn-translate --export-artifact %t/dp.mlir -o %t/dp
// RUN: FileCheck %s --check-prefix=DPMANIFEST --input-file=%t/dp/manifest.json
// RUN: %dump-onnx %t/dp/program_0.onnx | FileCheck %s --check-prefix=PROGRAM
// RUN: snn-opt %s --snn-plan="topology=dp=2 batch-size=8 mode=fsdp" --mlir-print-debuginfo -o %t/fsdp.mlir
// RUN: snn-translate --export-artifact %t/fsdp.mlir -o %t/fsdp
// RUN: FileCheck %s --check-prefix=FSDPMANIFEST --input-file=%t/fsdp/manifest.json
// tp and fsdp_tp need per-rank programs, which --snn-partition makes (artifact-partitioned.mlir);
// an unpartitioned tp or fsdp_tp plan, and a pp plan whose @main is not split into stage
// programs (--snn-split-pipeline-stages, artifact-pipeline.mlir), are refused naming the mode,
// leaving no directory (never an artifact that computes something else).
// RUN: snn-opt %s --snn-plan="topology=dp=2,tp=2 batch-size=8 mode=fsdp_tp" -o %t/fsdp_tp.mlir
// RUN: not snn-translate --export-artifact %t/fsdp_tp.mlir -o %t/fsdp_tp 2>&1 | FileCheck %s --check-prefix=FSDPTP
// RUN: not ls %t/fsdp_tp
// RUN: snn-opt %s --snn-plan="topology=tp=2 batch-size=8 mode=tp" -o %t/tp.mlir
// RUN: not snn-translate --export-artifact %t/tp.mlir -o %t/tp 2>&1 | FileCheck %s --check-prefix=TP
// RUN: snn-opt %s --snn-plan="topology=pp=2 batch-size=8 mode=pp" -o %t/pp.mlir
// RUN: not snn-translate --export-artifact %t/pp.mlir -o %t/pp 2>&1 | FileCheck %s --check-prefix=PP
// RUN: not ls %t/pp

// FSDPTP: error: plan mode 'fsdp_tp' is not partitioned: run --snn-partition before exporting (snn-compile runs it)
// TP: error: plan mode 'tp' is not partitioned: run --snn-partition before exporting (snn-compile runs it)
// PP: error: plan mode 'pp' is not split into stages: run --snn-split-pipeline-stages before exporting (snn-compile runs it)

// DPMANIFEST:      "explanation": {
// DPMANIFEST:        "candidates": [
// DPMANIFEST:        "topology": "dp=4",
// DPMANIFEST:        "world_size": 4
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
// DPMANIFEST:        "dp_mesh_dim": 0,
// DPMANIFEST:        "mode": "dp",
// DPMANIFEST:        "optimizer_strategy": "none",
// DPMANIFEST:        "partitioned": false,
// DPMANIFEST:        "pp_mesh_dim": -1,
// DPMANIFEST:        "rationale": [
// DPMANIFEST:        "tp_mesh_dim": -1
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
