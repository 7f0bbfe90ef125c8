//===- PipelineSync.h - What a pipeline's ranks agree on after a step -*- C++ -*-===//
//
// Only the last stage sees the loss; with a dp axis each replica trains its
// own share of the batch. After the pipeline flush these collectives make
// every rank agree: the step's metrics (broadcast over the pp group from the
// last stage, summed over dp), the gradients (averaged over dp, one flat
// all-reduce per rank, deterministic), BatchNorm's running statistics (dp
// member 0's, as DistributedDataParallel's broadcast_buffers), and a tensor
// only the last stage has (an eval or infer output).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_PIPELINE_PIPELINESYNC_H
#define SNN_RUNTIME_PIPELINE_PIPELINESYNC_H

#include "snn/Runtime/Pipeline/PipelineEngine.h"

#include <ATen/core/Tensor.h>

#include <vector>

namespace snn::runtime {

class ParameterStore;

/// Collective over the pp group, then over `dp` (null or invalid: none):
/// `values` as the last stage's rank holds them, summed over dp, on every
/// rank.
std::vector<double> shareLastStageValues(const std::vector<double> &values,
                                         const PipelinePlace &place,
                                         const dist::Group *dp);

/// Collective over `group`: every parameter's .grad becomes the mean over
/// the members (a parameter without one counts as zeros and gets one).
void averageGradients(const dist::Group &group, const ParameterStore &store);

/// Collective over `group`: every buffer becomes member 0's.
void broadcastBuffers(const dist::Group &group, const ParameterStore &store);

/// Collective over the pp group: the tensor the last stage's rank passes
/// (float32, any shape; the others pass an undefined one) on every member.
at::Tensor broadcastFromLastStage(const at::Tensor &tensor, const PipelinePlace &place);

} // namespace snn::runtime

#endif // SNN_RUNTIME_PIPELINE_PIPELINESYNC_H
