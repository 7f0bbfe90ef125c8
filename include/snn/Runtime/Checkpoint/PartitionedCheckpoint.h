//===- PartitionedCheckpoint.h - Whole checkpoints of tp runs ---*- C++ -*-===//
//
// A run of a partitioned artifact (tp, fsdp_tp; docs/checkpoints.md,
// "Tensor-parallel runs") saves ordinary whole checkpoints: the parameters,
// buffers and optimizer state of the whole model, equal to what one process
// training the unsplit model would save. Saving is collective: each rank's
// capture is completed over its dp group (zero and fsdp keep pieces there),
// its split entries are all-gathered over their mesh axis, and rank 0 writes
// the result. Resuming cuts each split entry back to this rank's part, so a
// tp checkpoint resumes bit-identically, and any whole checkpoint of the
// model (one process, dp, a sharded one merged) loads into a tp run.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_CHECKPOINT_PARTITIONEDCHECKPOINT_H
#define SNN_RUNTIME_CHECKPOINT_PARTITIONEDCHECKPOINT_H

#include "snn/Runtime/Checkpoint/Checkpoint.h"
#include "snn/Runtime/Distributed/Group.h"
#include "snn/Runtime/Execution/ParameterPartition.h"

#include <string>
#include <utility>
#include <vector>

namespace snn::runtime {

/// A parameter's name and the shape this rank trains (its local shape).
using ParameterShape = std::pair<std::string, std::vector<int64_t>>;

/// Collective over `group` (a zero or fsdp run's dp group): `state`, this
/// rank's capture with the pieces of `parameters` (the same list, in the same
/// order, on every member), becomes the whole state of those parameters on
/// every member: values and optimizer state put together from the members'
/// pieces bit for bit. Buffers are kept as they are (whole everywhere).
void mergePiecesOverGroup(CheckpointState &state,
                          const std::vector<ParameterShape> &parameters,
                          const dist::Group &group);

/// Collective over the mesh: every split entry of `state` (parameter or
/// buffer values, and the optimizer state of split parameters) is replaced
/// by the whole tensor gathered from the members of its mesh axis. `state`
/// must hold whole local entries (no pieces), in the same order on every
/// rank.
void gatherWholeCheckpoint(CheckpointState &state,
                           const ParameterPartition &partition);

/// This rank's part of a whole checkpoint `whole`: every split entry cut to
/// this rank's part of its split dimension. Throws Error naming `where` and
/// the parameter when a split entry does not have the whole shape.
CheckpointState localCheckpoint(const CheckpointState &whole,
                                const ParameterPartition &partition,
                                const std::string &where);

} // namespace snn::runtime

#endif // SNN_RUNTIME_CHECKPOINT_PARTITIONEDCHECKPOINT_H
