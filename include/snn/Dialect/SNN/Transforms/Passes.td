#ifndef SNN_TRANSFORMS_PASSES_TD
#define SNN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AnalyzeModel : Pass<"snn-analyze", "::mlir::ModuleOp"> {
  let summary = "Find stateful neurons, tensor-parallel candidates and unsplittable layers";
  let description = [{
    The reference package's analyze(): every stateful neuron of the model (they carry membrane
    state across T), the tensor-parallel candidates under the requested roots (`snn.linear`;
    `snn.conv2d` channel splits with `experimental-conv-tp`), the layers under the roots that
    cannot be split, and notes. A root names a source module path (the ops' NameLoc): `conv_fc`
    covers `conv_fc` and `conv_fc.*`. An empty or unknown root is an error.

    The result is attached as the `snn.analysis` module attribute for later passes, printed as
    a readable summary (`summary`) and optionally written as JSON (`analysis-json`).
  }];
  let dependentDialects = ["::snn::SNNDialect"];
  let options = [
    ListOption<"roots", "roots", "std::string",
               "Module paths to search for tensor-parallel candidates (default: whole model)">,
    Option<"experimentalConvTP", "experimental-conv-tp", "bool", "false",
           "Count ungrouped conv2d layers as tensor-parallel candidates (channel split)">,
    Option<"summary", "summary", "std::string", "\"stderr\"",
           "Where to print the text summary: stderr, - (stdout), none, or a file">,
    Option<"analysisJSON", "analysis-json", "std::string", "\"\"",
           "Also write the analysis as JSON to this file (- for stdout)">,
  ];
}

def PlanParallelism : Pass<"snn-plan", "::mlir::ModuleOp"> {
  let summary = "Choose a parallel mode and annotate the IR with its shardings";
  let description = [{
    Picks a mode (none, dp, zero, fsdp, tp, fsdp_tp, pp) for an objective, a topology, a batch
    size, feature flags and a per-rank memory budget. With a countable model it estimates every
    mode that can use the world with the cost model (FLOPs, parameter bytes, activation bytes
    times T, communication volume) and picks by objective; otherwise it applies the reference
    package's decision table. A forced `mode` is checked, not chosen.

    Attaches the plan as the `snn.plan` module attribute (mode, mesh, optimizer strategy,
    memopt level, pipeline microbatches/schedule/virtual stages/layout, rationale, notes), a
    `shard.grid @mesh`, and `shard.shard` annotations for the mode (or `snn.pp_stage` per op
    for pp). Uses `snn.analysis` if present (its roots), else analyses the whole model.
  }];
  let dependentDialects = ["::snn::SNNDialect"];
  let options = [
    Option<"objective", "objective", "::snn::schema::Objective",
           "::snn::schema::Objective::Speed", "What to optimise">,
    Option<"topology", "topology", "std::string", "\"\"",
           "Mesh dims, e.g. dp=2,tp=2 (ordered dp, tp, pp, vpp, others; empty: one process)">,
    Option<"batchSize", "batch-size", "int64_t", "0", "Global batch size to plan for">,
    Option<"mode", "mode", "::snn::schema::RequestedMode", "::snn::schema::RequestedMode::Auto",
           "Force a mode (zero: dp with ZeRO-1), or let the planner choose (auto)">,
    Option<"experimentalConvTP", "experimental-conv-tp", "bool", "false",
           "Allow conv2d channel splits in tp and fsdp_tp">,
    Option<"allowPipeline", "allow-pipeline", "bool", "true",
           "Let the planner choose pipeline parallelism (the reference's default; "
           "=false to rule it out)">,
    Option<"allowZero", "allow-zero", "bool", "false",
           "Let the planner choose ZeRO-1 optimizer sharding">,
    Option<"memoryBudget", "memory-budget", "std::string", "\"\"",
           "Per-rank memory budget, e.g. 16GiB (default: none)">,
    Option<"worldSize", "world-size", "int64_t", "0",
           "Size of the device mesh to check the topology against (0: unchecked)">,
    Option<"costModel", "cost-model", "bool", "true",
           "Decide with the cost model (false: the reference decision table)">,
    Option<"ppLayout", "pp-layout", "std::string", "\"\"",
           "Explicit pipeline layout a|b|c: units per logical stage (default: cost-balanced)">,
    Option<"ppSchedule", "pp-schedule", "std::string", "\"\"",
           "Pipeline schedule: gpipe, 1f1b, interleaved_1f1b, zero_bubble (default: by "
           "virtual stages)">,
    Option<"ppMicrobatches", "pp-microbatches", "int64_t", "0",
           "Pipeline microbatches per data-parallel replica (default: recommended for its "
           "batch share and the logical stages)">,
    Option<"ppVirtualStages", "pp-virtual-stages", "int64_t", "0",
           "Virtual pipeline stages per rank (0: topology vpp, the layout's length, or the "
           "planner's rule)">,
    Option<"ppDelayWgrad", "pp-delay-wgrad", "bool", "false",
           "Delay weight gradients to fill pipeline bubbles (zero_bubble always does)">,
    ListOption<"ppMemoptStages", "pp-memopt-stages", "int64_t",
               "Logical pipeline stages that recompute their activations, e.g. 0,2 "
               "(default: the costliest by memopt-ratio when the plan recomputes)">,
    Option<"deviceGflops", "device-gflops", "double", "1000",
           "Cost model: sustained compute of one rank, GFLOP/s">,
    Option<"linkGBps", "link-gbps", "double", "10",
           "Cost model: bandwidth of a rank's link, GB/s">,
    Option<"latencyUs", "latency-us", "double", "20",
           "Cost model: latency of one collective step or message, microseconds">,
    Option<"deviceProfile", "device-profile", "std::string", "\"\"",
           "Cost model: this machine's measured times (a device profile written by "
           "snn-run calibrate), instead of device-gflops, link-gbps and latency-us">,
    Option<"deviceProfileAnyMachine", "device-profile-any-machine", "bool", "false",
           "Accept a device profile measured on another machine (plan for that machine)">,
    Option<"optimizerStates", "optimizer-states", "int64_t", "2",
           "Optimizer state tensors per parameter the memory estimate counts: 0 for SGD, 1 "
           "for SGD with momentum, 2 for Adam or AdamW">,
    Option<"memoptRatio", "memopt-ratio", "double", "0.5",
           "Share of pipeline stages that recompute activations, in (0, 1]">,
    Option<"explain", "explain", "std::string", "\"\"",
           "Print the analysis, plan and rationale to this file (- for stdout)">,
    Option<"planJSON", "plan-json", "std::string", "\"\"",
           "Write the analysis and plan as JSON to this file (- for stdout)">,
  ];
}

def PartitionTensorParallel : Pass<"snn-partition", "::mlir::ModuleOp"> {
  let summary = "Partition a tp or fsdp_tp plan into the per-rank program over its tp axis";
  let description = [{
    Does nothing unless the module's `#snn.plan` has mode tp or fsdp_tp and is not yet
    partitioned. Keeps, in every `shard.sharding`, only the splits over the plan's tp mesh
    axis (the runtime does the dp and fsdp part itself over the dp group, as in dp and fsdp
    modes), runs upstream's `sharding-propagation` and `shard-partition` on @main, and turns
    the shard collectives into snn ones named by the mesh axis (`snn.all_reduce`,
    `snn.all_gather`, `snn.all_slice`). Removes `tensor.cast`s that change no type and every
    shard op (grid included), and sets `partitioned = true` in the plan.

    Errors: an @main value left without a sharding by propagation; a shard op with no snn
    counterpart (`shard.all_to_all`, `shard.process_multi_index`, ...); a dropout on a
    tp-split value; a conv channel split without `experimental_conv_tp` in the plan; an @main
    input or output that the partition would split; and, as guards, a collective over several
    axes or a `tensor.cast` that changes a type.
  }];
  let dependentDialects = ["::snn::SNNDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def InsertBackwardCollectives : Pass<"snn-insert-backward-collectives", "::mlir::ModuleOp"> {
  let summary = "Sum the gradient of replicated values that rank-varying computations read";
  let description = [{
    On a partitioned module (`partitioned = true` in `#snn.plan`; otherwise nothing is done):
    a value is rank-varying over a mesh axis when it is the result of `snn.all_slice` over
    it, or of an op with a rank-varying operand (`snn.all_reduce` and `snn.all_gather`
    results are replicated over their axis). It requires a gradient when it is a trainable
    `snn.parameter` (not a `buffer`) or computed from one. Where an op whose result varies
    over an axis reads a replicated value that requires a gradient (other than
    `snn.all_slice`, whose backward gathers), each rank's gradient of that value is a partial
    sum: the use is routed through one `snn.backward_all_reduce` over that axis, placed right
    after the value's definition and shared by all such uses.
  }];
  let dependentDialects = ["::snn::SNNDialect"];
}

def SplitPipelineStages : Pass<"snn-split-pipeline-stages", "::mlir::ModuleOp"> {
  let summary = "Split a pp plan's @main into one function per logical pipeline stage";
  let description = [{
    Does nothing unless the module's `#snn.plan` has mode pp and @main is still there. Every
    op of @main carries its logical stage (`snn.pp_stage`, set by --snn-plan); @main becomes
    `func.func @stage_<k>` (attribute `snn.pp_stage = k`) for k = 0..K-1, K the length of
    the plan's `pp_layout`. Stage 0 takes @main's arguments, the last stage returns @main's
    results, the others take and return nothing. A value computed in stage i and read in a
    later stage j is handed on by adjacent stages only: `snn.send` at the end of stage i,
    `snn.recv` at the top of stage i + 1, and again by every stage up to j. The slots of an
    edge (k, k + 1) number its values in the order @main defines them. A parameter moves to
    the stage of its users. @main and the plan's `shard.grid` are erased.

    Errors: an op without `snn.pp_stage` or with a stage outside 0..K-1; a value read by an
    earlier stage than the one computing it; a parameter used by two stages; a stage left
    without ops.
  }];
  let dependentDialects = ["::snn::SNNDialect", "::mlir::func::FuncDialect"];
}

#endif // SNN_TRANSFORMS_PASSES_TD
