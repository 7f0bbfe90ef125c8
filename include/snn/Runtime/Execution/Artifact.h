//===- Artifact.h - An artifact directory loaded for one rank ---*- C++ -*-===//
#ifndef SNN_RUNTIME_EXECUTION_ARTIFACT_H
#define SNN_RUNTIME_EXECUTION_ARTIFACT_H

#include "snn/Runtime/Execution/Graph.h"
#include "snn/Runtime/Execution/Manifest.h"
#include "snn/Runtime/Execution/PipelineLayout.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace snn::runtime {

/// One logical stage's program (pipeline artifacts).
struct StageProgram {
  int64_t stage = 0;
  Graph program;
};

/// How an artifact runs, decided and checked once from its manifest when it is loaded for a
/// run (loadRunArtifact); the trainer, the evaluator, inference and the Python API read this
/// rather than asking the manifest for the mode again.
struct RunDescription {
  /// Per-rank programs (tp, fsdp_tp, a pipeline with tensor-parallel stages).
  bool partitioned = false;
  /// Mode pp: the checked layout (stages, schedule, microbatches, recomputed stages).
  std::optional<PipelineLayout> pipeline;
  /// The ranks that split a global batch (dataParallelSize).
  int64_t dataParallelSize = 1;
  /// The world size the artifact was planned for (its dp axis resized when
  /// this run has another).
  int plannedWorldSize = 1;
};

struct Artifact {
  std::string dir;
  Manifest manifest;
  /// Filled by loadRunArtifact; the defaults (one replicated program) otherwise.
  RunDescription run;
  /// The program of the rank the artifact was loaded for (a pipeline rank's
  /// first stage).
  Graph program;
  /// Pipeline artifacts (mode pp): every stage the rank runs, in stage
  /// order; empty otherwise.
  std::vector<StageProgram> stages;
};

/// Loads DIR/manifest.json and the program that `rank` runs (a pipeline
/// rank: each of its stage programs), and checks that they agree: boundary
/// names (a stage's recv and send nodes: StageInterface.h), parameter shapes
/// (a replicated parameter's whole shape, a split one's part:
/// ParameterSpec::localShape) and the mesh axes of the collectives.
/// `worldSize` > 0: the ranks of this run, to which an artifact planned for
/// another number is fitted first by resizing its dp axis
/// (DataParallelResize.h); 0: as planned.
Artifact loadArtifact(const std::string &dir, int rank = 0, int worldSize = 0);

/// Loads a single-rank artifact; `command` ("train") names the subcommand in
/// the error for a partitioned one.
Artifact loadSingleRankArtifact(const std::string &dir,
                                const std::string &command);

/// Loads every stage program of a pipeline artifact (any rank's), checked as
/// loadArtifact checks a rank's; for writing the whole model (export).
std::vector<StageProgram> loadAllStages(const Artifact &artifact);

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_ARTIFACT_H
