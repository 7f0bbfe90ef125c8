//===- PipelineCheckpoint.h - Whole checkpoints of pipeline runs -*- C++ -*-===//
//
// A pipeline rank holds only its stages' parameters, buffers and optimizer
// state. Checkpoints (and --save-params, --export-onnx) are nevertheless of
// the whole model, as one process training the unsplit model writes them:
// the ranks of a pp group put their disjoint parts together (collective; the
// same integer-sum all-reduce that merges zero/fsdp pieces, so every value
// keeps its bits), in manifest order, and rank 0 writes. Resuming cuts the
// whole checkpoint back to what this rank holds, so a pp checkpoint resumes
// bit-identically, loads into a one-process or dp run of the same model,
// and theirs into a pp run (docs/checkpoints.md).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_CHECKPOINT_PIPELINECHECKPOINT_H
#define SNN_RUNTIME_CHECKPOINT_PIPELINECHECKPOINT_H

#include "snn/Runtime/Checkpoint/Checkpoint.h"
#include "snn/Runtime/Distributed/Group.h"
#include "snn/Runtime/Execution/Manifest.h"
#include "snn/Runtime/Execution/ParameterStore.h"

#include <string>

namespace snn::runtime {

/// Collective over the pp group (`group`; null or of one member: nothing to
/// gather): `state`, this rank's capture of its stages (whole entries),
/// becomes the whole model's on every member: every manifest parameter and
/// buffer in manifest order, and the optimizer state of every parameter.
void gatherPipelineCheckpoint(CheckpointState &state, const Manifest &manifest,
                              const dist::Group *group);

/// This rank's part of a whole checkpoint: the entries `store` holds and
/// their optimizer state. Throws Error naming `where` unless the checkpoint
/// holds exactly the manifest's model (names, kinds, shapes).
CheckpointState pipelineLocalCheckpoint(const CheckpointState &whole,
                                        const ParameterStore &store,
                                        const Manifest &manifest,
                                        const std::string &where);

/// Collective as gatherPipelineCheckpoint: the whole model's parameters and
/// buffers (for --save-params and --export-onnx).
ParameterStore gatherPipelineStore(const ParameterStore &local, const Manifest &manifest,
                                   const dist::Group *group);

} // namespace snn::runtime

#endif // SNN_RUNTIME_CHECKPOINT_PIPELINECHECKPOINT_H
