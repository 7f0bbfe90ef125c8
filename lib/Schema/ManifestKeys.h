//===- ManifestKeys.h - manifest.json's key names -----------------*- C++ -*-===//
//
// The one spelling of every manifest key, shared by the writer (ManifestWriter.cpp) and the
// reader (Manifest.cpp), so a field cannot be renamed on one side only.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_SCHEMA_MANIFESTKEYS_H
#define SNN_SCHEMA_MANIFESTKEYS_H

namespace snn::schema {

namespace key {
constexpr const char *kFormat = "format", *kVersion = "version", *kProducer = "producer",
                     *kSource = "source", *kWorldSize = "world_size", *kMesh = "mesh",
                     *kAxes = "axes", *kShape = "shape", *kPrograms = "programs",
                     *kFile = "file", *kRanks = "ranks", *kInput = "input",
                     *kOutput = "output", *kName = "name", *kTimeMajor = "time_major",
                     *kParameters = "parameters", *kKind = "kind", *kSharding = "sharding",
                     *kSplitDim = "split_dim", *kMeshAxis = "mesh_axis", *kStage = "stage",
                     *kFrozen = "frozen", *kSplitGroups = "split_groups",
                     *kRepeatedOverTime = "repeated_over_time",
                     *kPlan = "plan", *kExplanation = "explanation";
} // namespace key

/// The plan's keys, as the reference package names its plan fields.
namespace plankey {
constexpr const char *kMode = "mode", *kObjective = "objective",
                     *kOptimizer = "optimizer_strategy", *kPartitioned = "partitioned",
                     *kBatchSize = "batch_size", *kMemoptLevel = "memopt_level",
                     *kDpMeshDim = "dp_mesh_dim", *kTpMeshDim = "tp_mesh_dim",
                     *kPpMeshDim = "pp_mesh_dim", *kMicrobatches = "pp_microbatches",
                     *kSchedule = "pp_schedule", *kVirtualStages = "pp_virtual_stages",
                     *kLayout = "pp_layout", *kMemoptStages = "pp_memopt_stages",
                     *kDelayWgrad = "pp_delay_wgrad", *kStageUnits = "pp_stage_units",
                     *kStageCosts = "pp_stage_costs",
                     *kTensorParallelPairs = "tensor_parallel_pairs",
                     *kCommunication = "communication", *kCalls = "calls",
                     *kBytes = "bytes", *kDecidedBy = "decided_by", *kRationale = "rationale",
                     *kPrediction = "prediction", *kStepSeconds = "step_seconds",
                     *kComputeSeconds = "compute_seconds", *kCommSeconds = "comm_seconds",
                     *kMemoryBytes = "memory_bytes", *kTimes = "times",
                     *kOptimizerStates = "optimizer_states";
} // namespace plankey

/// The explanation's keys (the plan's context and the planner's comparison).
namespace explainkey {
constexpr const char *kTopology = "topology", *kWorldSize = "world_size",
                     *kMeshAxes = "mesh_axes", *kMeshShape = "mesh_shape",
                     *kFeatures = "features", *kConvTP = "experimental_conv_tp",
                     *kAllowPipeline = "allow_pipeline", *kAllowZero = "allow_zero",
                     *kMemoryBudget = "memory_budget", *kRoots = "tensor_parallel_roots",
                     *kNotes = "notes", *kCandidates = "candidates", *kModel = "model";
constexpr const char *kLabel = "mode", *kMesh = "mesh", *kFeasible = "feasible",
                     *kReason = "reason", *kStep = "step_seconds",
                     *kCompute = "compute_seconds", *kComm = "comm_seconds",
                     *kCommBytes = "comm_bytes", *kMemoryBytes = "memory_bytes",
                     *kStateBytes = "state_bytes", *kActivationBytes = "activation_bytes",
                     *kMemopt = "memopt_level", *kFits = "fits_budget";
constexpr const char *kTimeSteps = "time_steps", *kParamBytes = "param_bytes",
                     *kBufferBytes = "buffer_bytes", *kForwardFlops = "forward_flops",
                     *kPipelineUnits = "pipeline_units";
} // namespace explainkey

} // namespace snn::schema

#endif // SNN_SCHEMA_MANIFESTKEYS_H
