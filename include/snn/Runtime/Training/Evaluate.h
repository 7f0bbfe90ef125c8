//===- Evaluate.h - Loss and accuracy over a whole split --------*- C++ -*-===//
#ifndef SNN_RUNTIME_TRAINING_EVALUATE_H
#define SNN_RUNTIME_TRAINING_EVALUATE_H

#include "snn/Runtime/Data/BatchLoader.h"
#include "snn/Runtime/Optim/Loss.h"
#include "snn/Runtime/Optim/Metrics.h"
#include "snn/Runtime/Execution/Model.h"

namespace snn::runtime {

/// Runs every batch of `loader` (epoch 0 of its order; evaluation loaders
/// use file order and keep the last batch) in eval mode and returns loss and
/// accuracy averaged over samples: sum(batch loss * N) / S and correct / S.
EvalMetrics evaluate(Model &model, BatchLoader &loader, LossKind loss);

class PipelineEngine;

/// The same through a pipeline's stages (collective over the pp group):
/// each batch once through the stages in eval mode, the last stage computes
/// loss and accuracy, and every rank of the pp group returns them.
EvalMetrics evaluatePipeline(PipelineEngine &engine, BatchLoader &loader, LossKind loss);

} // namespace snn::runtime

#endif // SNN_RUNTIME_TRAINING_EVALUATE_H
