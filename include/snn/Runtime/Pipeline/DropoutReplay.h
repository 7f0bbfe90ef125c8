//===- DropoutReplay.h - A pipeline's Dropout masks, as one process draws them -*- C++ -*-===//
//
// One process accumulating over microbatches (docs/training.md) draws the
// Dropout masks from one generator in a fixed order: microbatch 0 through
// every layer of the model, then microbatch 1, ... (with D data-parallel
// replicas: the D x M chunks of the global batch). A pipeline runs the same
// forwards on several ranks and in its schedule's order, so each rank
// replays that sequence: at the start of a step it draws every mask of the
// step (every stage's, on every rank: the cost of generating the step's
// masks once more per rank, not of the layers), keeping the generator state
// where each of its own (microbatch, stage) forwards begins, then runs each
// forward from its state. The masks, and the generator's state after the
// step (the same on every rank, so a checkpoint's is everyone's), are one
// process's.
//
// The mask shapes come from a dry run of each stage (eval mode, one sample)
// when the engine starts; the ranks exchange them over the pp group.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_PIPELINE_DROPOUTREPLAY_H
#define SNN_RUNTIME_PIPELINE_DROPOUTREPLAY_H

#include "snn/Runtime/Pipeline/PipelineEngine.h"

#include <ATen/core/Tensor.h>

#include <map>
#include <utility>
#include <vector>

namespace snn::runtime {

class DropoutReplay {
public:
  /// Collective over the pp group (when there is one): every stage's
  /// Dropout layers, from this rank's dry runs and the others'.
  DropoutReplay(Model &model, const PipelinePlace &place);

  /// Whether any stage has a Dropout layer that draws (0 < p < 1).
  bool active() const { return drawing; }
  /// At the step's start, from the generator's state (the same on every
  /// rank): draws the step's masks of microbatches of `samples` samples,
  /// keeping where each of this rank's forwards begins.
  void planStep(int64_t samples);
  /// Before this rank's forward of (stage, microbatch).
  void enter(int64_t stage, int64_t microbatch);
  /// After the step: the generator where one process leaves it.
  void finishStep();

private:
  struct Layer {
    double p = 0.5;
    std::vector<int64_t> shape; // its input for one sample, [T, 1, ...]
  };

  std::vector<Layer> discover(Model &model, int64_t stage);
  void exchange();

  PipelinePlace where;
  std::vector<std::vector<Layer>> layers; // by stage
  bool drawing = false;
  std::map<std::pair<int64_t, int64_t>, at::Tensor> starts; // (microbatch, stage)
  at::Tensor after;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_PIPELINE_DROPOUTREPLAY_H
