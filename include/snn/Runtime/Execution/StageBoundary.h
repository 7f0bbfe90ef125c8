//===- StageBoundary.h - What one pipeline stage run receives and sends -*- C++ -*-===//
//
// A pipeline artifact (mode pp) holds one program per logical stage; the
// tensors that cross from stage k to stage k + 1 are the program's `recv`
// and `send` nodes, numbered by slot (docs/artifact-format.md, "Pipeline
// programs"). The executor knows nothing of ranks or transfers: the caller
// fills `received` before a stage runs (RunContext::boundary), the recv
// kernels read it, and the send kernels leave their inputs in `sent`, which
// the caller then moves to the next stage.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_STAGEBOUNDARY_H
#define SNN_RUNTIME_EXECUTION_STAGEBOUNDARY_H

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>

namespace snn::runtime {

struct StageBoundary {
  /// Inputs from the previous stage, by slot: one per recv node.
  std::map<int64_t, at::Tensor> received;
  /// Outputs for the next stage, by slot: one per send node, after the run.
  std::map<int64_t, at::Tensor> sent;
};

/// How Model::runStage runs a pipeline stage.
enum class StagePass {
  Eval,     ///< inference mode, running statistics
  Training, ///< grad mode on, batch statistics, Dropout, as forward()
  /// Training values without recording a graph (a recomputed stage's
  /// first forward: nothing is kept but what the caller holds).
  TrainingWithoutGraph,
  /// The same forward again, recording the graph; BatchNorm's running
  /// statistics stay as the first forward left them.
  Recomputation,
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_STAGEBOUNDARY_H
