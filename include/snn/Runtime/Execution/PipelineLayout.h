//===- PipelineLayout.h - Where a pp artifact's stages run ------*- C++ -*-===//
//
// A pipeline artifact (plan mode pp) has K = S x V logical stages over a mesh
// ["pp"] or ["dp", "pp"] whose pp axis has S members; stage k runs on the
// ranks at pp coordinate k mod S (docs/artifact-format.md, "Pipeline
// programs"), and the plan says how many microbatches M a batch is cut into
// and which schedule orders their forwards and backwards. This is that
// description, read and checked once from the manifest.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_PIPELINELAYOUT_H
#define SNN_RUNTIME_EXECUTION_PIPELINELAYOUT_H

#include "snn/Runtime/Execution/Manifest.h"

#include <cstdint>
#include <string>
#include <vector>

namespace snn::runtime {

struct PipelineLayout {
  int64_t stageCount = 1;    ///< K, logical stages
  int64_t ranks = 1;         ///< S, members of the pp axis
  int64_t virtualStages = 1; ///< V = K / S, stages per rank
  int64_t microbatches = 1;  ///< M, per data-parallel replica's batch
  schema::PipelineSchedule schedule = schema::PipelineSchedule::GPipe;
  /// pp_delay_wgrad: weight gradients run as separate W actions.
  bool delayWeightGrad = false;
  /// pp_memopt_stages: logical stages whose forward keeps only its inputs
  /// and runs again, recording the graph, right before its backward.
  std::vector<int64_t> recomputedStages;

  /// The pp coordinate (= rank in the pp group) that runs `stage`.
  int64_t coordinateOf(int64_t stage) const { return stage % ranks; }
  /// The stages the rank at pp coordinate `coordinate` runs, ascending.
  std::vector<int64_t> stagesOf(int64_t coordinate) const;
  /// Whether backward is split into input gradients (B) and weight
  /// gradients (W): zero_bubble, or pp_delay_wgrad.
  bool recomputes(int64_t stage) const;
  bool splitsBackward() const {
    return delayWeightGrad ||
           schedule == schema::PipelineSchedule::ZeroBubble;
  }
};

/// Whether the artifact is a pipeline (plan mode pp).
bool isPipeline(const Manifest &manifest);

/// The layout of a pp artifact. Throws Error naming `dir` unless: every
/// program has a stage exactly when the mode is pp; the mesh is ["pp"] or
/// ["dp", "pp"]; the pp size divides the stage count (and the quotient is
/// pp_virtual_stages when that is set); each stage's program lists exactly
/// the ranks at its pp coordinate; every parameter names a stage below K;
/// the plan has a schedule and at least one microbatch; every recomputed
/// stage is below K, listed once.
PipelineLayout readPipelineLayout(const std::string &dir,
                                  const Manifest &manifest);

/// Throws Error (prefixed by `where`) unless every stage of `stages` is below
/// `count` and listed once.
void checkRecomputedStages(const std::string &where,
                           const std::vector<int64_t> &stages, int64_t count);

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_PIPELINELAYOUT_H
