// The cost model on a measured machine (device-profile: a profile written by snn-run
// calibrate). The two hand-written profiles below differ only in their collectives: on the
// fast link dp's all-reduce costs little and dp is fastest; on the slow one (1 us per byte)
// the 2-stage pipeline, which sends only the boundary activations, wins. Both were "measured"
// on another CPU, so they need device-profile-any-machine; without a profile the rationale
// says the times are default constants.
// RUN: split-file %s %t
// RUN: snn-opt %S/Inputs/spiking_mlp.mlir --snn-plan="topology=dp=2 batch-size=32 explain=- device-profile=%S/Inputs/device-profile-fast-link.json device-profile-any-machine" -o /dev/null | FileCheck %s --check-prefix=FAST
// RUN: snn-opt %S/Inputs/spiking_mlp.mlir --snn-plan="topology=dp=2 batch-size=32 explain=- device-profile=%S/Inputs/device-profile-slow-link.json device-profile-any-machine" -o /dev/null | FileCheck %s --check-prefix=SLOW
// RUN: snn-opt %S/Inputs/spiking_mlp.mlir --snn-plan="topology=dp=2 batch-size=32 explain=-" -o /dev/null | FileCheck %s --check-prefix=DEFAULT
// The optimizer state the memory estimate counts is recorded in the plan when not Adam's 2.
// RUN: snn-opt %S/Inputs/spiking_mlp.mlir --snn-plan="topology=dp=2 batch-size=32 optimizer-states=1" | FileCheck %s --check-prefix=STATES
// STATES:    #snn.plan<{{.*}}optimizer_states = 1{{.*}}>
// FAST:      Plan: dp on dp=2 (objective speed, decided by cost-model)
// FAST:      - Model: {{.*}} Times are measured ones: device profile {{.*}}device-profile-fast-link.json (Test CPU @ 2.0GHz, 1 thread per rank, gloo). The profile has no training step of this model (snn-run calibrate --model): op curves alone.
// SLOW:      Plan: pp on pp=2 (objective speed, decided by cost-model)
// SLOW:      - Model: {{.*}} Times are measured ones: device profile {{.*}}device-profile-slow-link.json
// SLOW:      - Chose pp on pp=2 for the speed objective
// DEFAULT:   - Model: {{.*}} Times use default constants (1000 GFLOP/s, 10 GB/s, 20 us per step), not a measurement of this machine; give a device profile (snn-run calibrate, --device-profile) for measured ones.

// Errors: a missing file, malformed JSON, another machine's profile without the flag.
// RUN: snn-opt %t/missing.mlir --snn-plan="topology=dp=2 batch-size=8 device-profile=%t/none.json" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/malformed.mlir --snn-plan="topology=dp=2 batch-size=8 device-profile=%t/malformed.json" -verify-diagnostics -o /dev/null
// RUN: snn-opt %t/other_machine.mlir --snn-plan="topology=dp=2 batch-size=8 device-profile=%S/Inputs/device-profile-fast-link.json" -verify-diagnostics -o /dev/null

//--- malformed.json
{"format": "spikemesh-device-profile", "version": 1, "machine": {"cpu": "x"
//--- missing.mlir
// expected-error @below {{none.json: no such device profile (write one with `snn-run calibrate --out}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x8xf32> {
    %0 = snn.mean_time %x : (tensor<2x?x8xf32>) -> tensor<?x8xf32> loc("mean")
    return %0 : tensor<?x8xf32>
  }
}
//--- malformed.mlir
// expected-error @below {{malformed.json: invalid JSON}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x8xf32> {
    %0 = snn.mean_time %x : (tensor<2x?x8xf32>) -> tensor<?x8xf32> loc("mean")
    return %0 : tensor<?x8xf32>
  }
}
//--- other_machine.mlir
// expected-error @below {{device-profile-fast-link.json: measured on 'Test CPU @ 2.0GHz' (2 CPUs), this machine is}}
module {
  func.func @main(%x: tensor<2x?x8xf32>) -> tensor<?x8xf32> {
    %0 = snn.mean_time %x : (tensor<2x?x8xf32>) -> tensor<?x8xf32> loc("mean")
    return %0 : tensor<?x8xf32>
  }
}
