//===- Manifest.h - The artifact's manifest.json ----------------*- C++ -*-===//
//
// The one definition of what the compiler tells the runtime about an artifact
// (docs/artifact-format.md): the mesh, which program each rank runs, the
// parameters and how they are sharded, the program boundary and the plan. The
// exporter fills a Manifest and formats it; snn-run parses it back. Both go
// through Manifest.cpp, the only place that spells the JSON keys. Plain C++:
// no MLIR, no LibTorch; the JSON library stays inside Manifest.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_SCHEMA_MANIFEST_H
#define SNN_SCHEMA_MANIFEST_H

#include "snn/Schema/Enums.h"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace snn::schema {

/// The manifest's `format`, the `version` the exporter writes and the oldest
/// one this reader still accepts.
inline constexpr const char *kArtifactFormat = "spikemesh-artifact";
inline constexpr int kManifestVersion = 2;
inline constexpr int kOldestManifestVersion = 1;
/// Limits on manifest text: far above any real artifact's, far below what
/// exhausts memory or the stack of a reader.
inline constexpr size_t kMaxManifestBytes = size_t(64) << 20;
inline constexpr int kMaxManifestDepth = 32;
/// The sharding of a parameter every rank holds whole.
inline constexpr const char *kReplicated = "replicated";
/// The sharding of a parameter split in equal parts over one mesh axis: the
/// member at coordinate i of `mesh_axis` holds part i of dimension `split_dim`.
inline constexpr const char *kSplit = "split";
/// The `split_groups` of a fused attention projection's parameters: its output channels hold
/// the q, k and v blocks, each split over the members on its own. The only value besides 1.
inline constexpr int64_t kFusedProjectionBlocks = 3;

/// A malformed manifest; the message names the file and the field.
class ManifestError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// `input` / `output`: a tensor at the program boundary. -1 is a dynamic dim.
struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  bool timeMajor = false;
  /// The input only: the PyTorch model takes a static [N, ...] batch and repeats it over T
  /// in its forward (direct encoding), so the program's [T, N, ...] input is that batch
  /// repeated, and a runtime may take the model's own [N, ...] input and repeat it. Written
  /// only when true.
  bool repeatedOverTime = false;
};

/// One entry of `programs`: an ONNX file and the ranks that run it.
struct ProgramSpec {
  std::string file;
  std::vector<int> ranks;
  /// The logical pipeline stage the program computes (mode pp); -1: the
  /// whole model. Logical stage k runs on the ranks whose pp coordinate is
  /// k mod the pp size (k, k + S, ... share one rank: virtual stages).
  int64_t stage = -1;
};

enum class ParameterKind { Parameter, Buffer };
/// "parameter" or "buffer", as the manifest (and checkpoints) spell the kind.
const char *parameterKindName(ParameterKind kind);

/// One entry of `parameters`. `shape` is the whole parameter's; a split one's
/// program initializer holds the rank's part (see kSplit).
struct ParameterSpec {
  std::string name;
  std::vector<int64_t> shape;
  ParameterKind kind = ParameterKind::Parameter;
  std::string sharding = kReplicated;
  /// For kSplit: the split dimension and the mesh axis it is split over.
  int64_t splitDim = -1;
  std::string meshAxis;
  /// For kSplit: the split dimension holds this many equal blocks (a fused q, k, v
  /// projection: 3), each split over the members on its own; a member's part is its piece of
  /// every block, in block order. 1 (not written): one block, a contiguous part.
  int64_t splitGroups = 1;
  /// Mode pp: the logical pipeline stage whose program holds it (only the
  /// ranks of that stage hold it); -1: every program.
  int64_t stage = -1;
  /// A weight that is never trained (requires_grad=False in PyTorch, or snn-run train
  /// --freeze): the runtime holds it like a buffer. Written only when true.
  bool frozen = false;

  bool isSplit() const { return sharding == kSplit; }
  /// The part one rank holds: `shape` with splitDim divided by `parts`.
  std::vector<int64_t> localShape(int64_t parts) const;
};

/// The named device mesh: one axis name and size per dimension.
struct MeshSpec {
  std::vector<std::string> axes;
  std::vector<int64_t> shape;
};

/// The collectives of one kind over one mesh axis that one rank runs in one training step
/// (forward and backward), as the compiler counts them on the partitioned program: `calls`
/// collectives, and as `bytes` the float32 size of the tensors they return on the rank
/// (docs/artifact-format.md, "Partitioned programs").
struct CommunicationVolume {
  std::string kind; ///< "all_reduce" or "all_gather" (op::kAllReduce, op::kAllGather)
  std::string meshAxis;
  int64_t calls = 0;
  int64_t bytes = 0;
};

/// What the planner predicted for the chosen plan, per rank and training step:
/// `snn-run train` logs it next to what it measured (docs/training.md).
struct PlanPrediction {
  double stepSeconds = 0, computeSeconds = 0, commSeconds = 0;
  int64_t memoryBytes = 0;
  /// Where the times come from: "device profile p.json (...)" or "default constants".
  std::string times;
  /// Optimizer state tensors per parameter that memoryBytes counts (0 SGD, 1 SGD with
  /// momentum, 2 Adam/AdamW).
  int64_t optimizerStates = 2;
};

/// The plan's decisions that the runtime acts on, and why they were taken.
struct PlanSpec {
  ParallelMode mode = ParallelMode::None;
  Objective objective = Objective::Speed;
  OptimizerStrategy optimizer = OptimizerStrategy::None;
  /// Whether the programs are per-rank partitions (false: one program that
  /// every rank runs whole).
  bool partitioned = false;
  int64_t batchSize = 0;
  int64_t memoptLevel = 0;
  /// Mesh dimension of each role; -1 when the mode has none.
  int64_t dpMeshDim = -1, tpMeshDim = -1, ppMeshDim = -1;
  int64_t ppMicrobatches = 0;
  std::optional<PipelineSchedule> ppSchedule;
  int64_t ppVirtualStages = 0;
  std::vector<int64_t> ppLayout;       ///< units per logical stage
  std::vector<int64_t> ppMemoptStages; ///< logical stages that recompute
  /// The planner's cost of each logical stage (what pp_memopt_stages are chosen by).
  std::vector<double> ppStageCosts;
  bool ppDelayWgrad = false;
  std::vector<std::vector<std::string>> ppStageUnits;
  std::vector<std::string> tensorParallelPairs;
  /// Per training step and rank, one entry per (kind, mesh axis) with calls; empty when the
  /// programs are not partitioned (the runtime's own dp collectives are not counted).
  std::vector<CommunicationVolume> communication;
  std::string decidedBy;
  std::vector<std::string> rationale;
  /// Absent for plans without estimates (the reference table, or no countable model).
  std::optional<PlanPrediction> prediction;
};

/// One mode on one mesh as the planner estimated it, per rank and training
/// step. `label` is the mode as a user writes it (dp+zero, fsdp_tp).
struct PlanCandidate {
  std::string label;
  std::string mesh;
  bool feasible = true;
  std::string reason; ///< why not feasible
  double stepSeconds = 0, computeSeconds = 0, commSeconds = 0;
  int64_t commBytes = 0, memoryBytes = 0, stateBytes = 0, activationBytes = 0;
  int64_t memoptLevel = 0;
  bool fitsBudget = true;
};

/// The cost model's totals for the planned batch.
struct ModelSummary {
  int64_t timeSteps = 0;
  int64_t paramBytes = 0;
  int64_t bufferBytes = 0;
  double forwardFlops = 0;
  int64_t activationBytes = 0;
  int64_t pipelineUnits = 0;
};

/// What the plan answered and what it compared: for people (--explain-json,
/// the manifest's `explanation`); the runtime never acts on it.
struct PlanExplanation {
  std::string topology; ///< as requested, e.g. "dp=2,tp=2"; empty: one process
  int64_t worldSize = 1;
  bool experimentalConvTP = false, allowPipeline = false, allowZero = false;
  int64_t memoryBudget = 0; ///< bytes per rank; 0: none
  std::vector<std::string> tensorParallelRoots;
  std::vector<std::string> notes;
  std::vector<PlanCandidate> candidates;
  std::optional<ModelSummary> model;
};

struct Manifest {
  std::string format = kArtifactFormat;
  int version = kManifestVersion;
  std::string producer;
  std::string source;
  int worldSize = 1;
  MeshSpec mesh;
  std::vector<ProgramSpec> programs;
  TensorSpec input;
  TensorSpec output;
  std::vector<ParameterSpec> parameters;
  PlanSpec plan;
  /// Present when the artifact was planned.
  std::optional<PlanExplanation> explanation;

  /// The program that `rank` runs (a pipeline rank's first stage); throws
  /// ManifestError if none lists it.
  const ProgramSpec &programForRank(int rank) const;
  /// Every program `rank` runs, in stage order: one, or (mode pp) one per
  /// logical stage it holds. Throws ManifestError if none lists it.
  std::vector<const ProgramSpec *> programsForRank(int rank) const;
  /// Pipeline artifacts: the number of logical stages (0 without stages).
  int64_t stageCount() const;
};

/// The plan, its mesh and (when given) its explanation as one JSON object:
/// what `snn-compile --explain-json` prints under "plan".
std::string formatPlanJson(const PlanSpec &plan, const MeshSpec &mesh,
                           const PlanExplanation *explanation);

/// The manifest as JSON text (two-space indented, newline-terminated).
std::string formatManifest(const Manifest &manifest);

/// Parses and validates manifest text of any version from
/// kOldestManifestVersion to kManifestVersion; `name` prefixes every message.
/// Throws ManifestError.
Manifest parseManifest(const std::string &text, const std::string &name);

} // namespace snn::schema

#endif // SNN_SCHEMA_MANIFEST_H
