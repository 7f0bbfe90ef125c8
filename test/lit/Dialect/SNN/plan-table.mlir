// Every branch of the reference decision table (docs/reference-api.md), used when the cost model is
// off (cost-model=false) or the IR cannot be counted (last case).
// RUN: split-file %s %t
// RUN: snn-opt %S/Inputs/spiking_mlp.mlir --snn-plan="cost-model=false batch-size=8 explain=-" -o /dev/null | FileCheck %s --check-prefix=W1-SPEED
// RUN: snn-opt %S/Inputs/spiking_mlp.mlir --snn-plan="cost-model=false batch-size=8 objective=memory explain=-" -o /dev/null | FileCheck %s --check-prefix=W1-MEMORY
// RUN: snn-opt %S/Inputs/spiking_mlp.mlir --snn-plan="cost-model=false topology=dp=4 batch-size=8 allow-zero explain=-" -o /dev/null | FileCheck %s --check-prefix=SPEED-ZERO
// RUN: snn-opt %S/Inputs/spiking_mlp.mlir --snn-plan="cost-model=false topology=dp=4 batch-size=8 explain=-" -o /dev/null | FileCheck %s --check-prefix=SPEED
// RUN: snn-opt %S/Inputs/spiking_mlp.mlir --snn-plan="cost-model=false topology=dp=8 batch-size=8 objective=memory explain=-" -o /dev/null | FileCheck %s --check-prefix=MEMORY-EVEN
// RUN: snn-opt %S/Inputs/spiking_mlp.mlir --snn-plan="cost-model=false topology=tp=2 batch-size=8 objective=memory explain=-" -o /dev/null | FileCheck %s --check-prefix=MEMORY-TP
// RUN: snn-opt %S/Inputs/deep_conv.mlir --snn-plan="cost-model=false topology=dp=4 batch-size=8 objective=memory explain=-" -o /dev/null | FileCheck %s --check-prefix=MEMORY-FSDP
// RUN: snn-opt %t/no_params.mlir --snn-plan="cost-model=false topology=dp=3 batch-size=6 objective=memory explain=-" -o /dev/null | FileCheck %s --check-prefix=MEMORY-DP
// RUN: snn-opt %S/Inputs/deep_conv.mlir --snn-plan="cost-model=false topology=pp=4 batch-size=8 objective=capacity allow-pipeline explain=-" -o /dev/null | FileCheck %s --check-prefix=CAPACITY-VS2
// RUN: snn-opt %S/Inputs/deep_conv.mlir --snn-plan="cost-model=false topology=pp=4 batch-size=4 objective=capacity allow-pipeline explain=-" -o /dev/null | FileCheck %s --check-prefix=CAPACITY-VS1
// RUN: snn-opt %S/Inputs/spiking_mlp.mlir --snn-plan="cost-model=false topology=dp=4 batch-size=3 objective=capacity allow-pipeline explain=-" -o /dev/null | FileCheck %s --check-prefix=CAPACITY-VS0
// RUN: snn-opt %S/Inputs/spiking_mlp.mlir --snn-plan="cost-model=false topology=dp=4 batch-size=8 objective=capacity allow-pipeline=false explain=-" -o /dev/null | FileCheck %s --check-prefix=CAPACITY-NOPP
// Pipelines are allowed by default (as in the reference). The spiking MLP has 4 units: the row's
// 2 virtual stages on 4 ranks need 8, so 1 (CAPACITY-FEWUNITS); on 8 ranks no pipeline fits and
// the memory rows decide (CAPACITY-NOFIT).
// RUN: snn-opt %S/Inputs/spiking_mlp.mlir --snn-plan="cost-model=false topology=dp=4 batch-size=8 objective=capacity explain=-" -o /dev/null | FileCheck %s --check-prefix=CAPACITY-FEWUNITS
// RUN: snn-opt %S/Inputs/spiking_mlp.mlir --snn-plan="cost-model=false topology=dp=8 batch-size=8 objective=capacity explain=-" -o /dev/null | FileCheck %s --check-prefix=CAPACITY-NOFIT
// RUN: snn-opt %t/dynamic.mlir --snn-plan="topology=dp=2 batch-size=8 explain=-" -o /dev/null | FileCheck %s --check-prefix=UNCOUNTABLE

// W1-SPEED:      Plan: none on single process (objective speed, decided by reference-table)
// W1-SPEED-NEXT:   topology single process (world size 1), batch size 8
// W1-SPEED-NEXT:   optimizer none, memopt level 0
// W1-SPEED:      - Decided by the reference table because the cost model is switched off: world size 1: a single process.

// W1-MEMORY:      Plan: none on single process (objective memory, decided by reference-table)
// W1-MEMORY:        optimizer none, memopt level 1

// SPEED-ZERO:      Plan: dp+zero on dp=4 (objective speed, decided by reference-table)
// SPEED-ZERO:        optimizer zero, memopt level 0
// SPEED-ZERO:      speed objective: dp with ZeRO-1 optimizer sharding

// SPEED:      Plan: dp on dp=4 (objective speed, decided by reference-table)
// SPEED:        optimizer none, memopt level 0
// SPEED:      speed objective: dp (ZeRO not allowed)

// MEMORY-EVEN:      Plan: fsdp_tp on dp=4 x tp=2 (objective memory, decided by reference-table)
// MEMORY-EVEN:        optimizer none, memopt level 1
// MEMORY-EVEN:        tensor-parallel pairs (1): 1 -> 3

// MEMORY-TP:      Plan: tp on tp=2 (objective memory, decided by reference-table)
// MEMORY-TP:      memory objective: tensor parallelism is available

// MEMORY-FSDP:      Plan: fsdp on dp=4 (objective memory, decided by reference-table)
// MEMORY-FSDP:      memory objective: no tensor-parallel candidate, so fsdp

// MEMORY-DP:      Plan: dp on dp=3 (objective memory, decided by reference-table)
// MEMORY-DP:      no tensor-parallel candidate and no parameters to shard, so dp

// CAPACITY-VS2:      Plan: pp on pp=4 (objective capacity, decided by reference-table)
// CAPACITY-VS2:        optimizer none, memopt level 1
// CAPACITY-VS2:        pipeline: 8 microbatches, schedule interleaved_1f1b, 2 virtual stage(s) per rank, layout 1|1|1|1|1|1|1|1
// CAPACITY-VS2-NEXT:     stage 0 (rank 0): 0
// CAPACITY-VS2:          stage 4 (rank 0): 4
// CAPACITY-VS2:      capacity objective: pp with 2 virtual stage(s) per rank (batch 8 >= 2W)

// CAPACITY-VS1:      Plan: pp on pp=4 (objective capacity, decided by reference-table)
// CAPACITY-VS1:        pipeline: 4 microbatches, schedule 1f1b, 1 virtual stage(s) per rank, layout 2|2|2|2
// CAPACITY-VS1:      capacity objective: pp with 1 virtual stage(s) per rank (batch 4 >= W)

// CAPACITY-VS0:      Plan: fsdp_tp on dp=2 x tp=2 (objective capacity, decided by reference-table)
// CAPACITY-VS0:      capacity objective: batch 3 < W leaves no microbatch per stage, so as memory

// CAPACITY-NOPP:      Plan: fsdp_tp on dp=2 x tp=2 (objective capacity, decided by reference-table)
// CAPACITY-NOPP:      capacity objective without pipelines allowed, so as memory

// CAPACITY-FEWUNITS:      Plan: pp on pp=4 (objective capacity, decided by reference-table)
// CAPACITY-FEWUNITS:        pipeline: 8 microbatches, schedule 1f1b, 1 virtual stage(s) per rank, layout 1|1|1|1
// CAPACITY-FEWUNITS:      capacity objective: pp with 2 virtual stage(s) per rank (batch 8 >= 2W); 1 virtual stage per rank, as 2 do not fit (pp with 8 logical stages needs at least as many stage units (blocks); the model has 4).

// CAPACITY-NOFIT:      Plan: fsdp_tp on dp=4 x tp=2 (objective capacity, decided by reference-table)
// CAPACITY-NOFIT:      capacity objective: no pipeline fits (pp with 8 logical stages needs at least as many stage units (blocks); the model has 4), so as memory; memory objective on an even world of at least 4 ranks: fsdp_tp on (W/2, 2).

// UNCOUNTABLE:      Plan: dp on dp=2 (objective speed, decided by reference-table)
// UNCOUNTABLE:      Decided by the reference table because no model information (the model input has a dynamic dimension 2 other than the batch)

//--- no_params.mlir
module {
  func.func @main(%x: tensor<2x?x4xf32>) -> tensor<?x4xf32> {
    %0 = snn.if_node %x {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x4xf32> loc("sn")
    %1 = snn.mean_time %0 : (tensor<2x?x4xf32>) -> tensor<?x4xf32> loc("mean")
    return %1 : tensor<?x4xf32>
  }
}

//--- dynamic.mlir
module {
  func.func @main(%x: tensor<2x?x?xf32>) -> tensor<2x?x?xf32> {
    %0 = snn.if_node %x {v_threshold = 1.0 : f32, v_reset = 0.0 : f32, detach_reset = false, surrogate = #snn<surrogate atan>, alpha = 2.0 : f32} : tensor<2x?x?xf32> loc("sn")
    return %0 : tensor<2x?x?xf32>
  }
}
