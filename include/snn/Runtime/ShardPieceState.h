//===- ShardPieceState.h - Optimizer state of a rank's pieces ---*- C++ -*-===//
//
// ZeRO and fsdp keep optimizer state per ShardPiece (the part of one
// parameter in this rank's chunk). The update is elementwise, so a piece's
// state is exactly the slice of the whole parameter's state; these helpers
// move between the two and write pieces into checkpoints.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_SHARDPIECESTATE_H
#define SNN_RUNTIME_SHARDPIECESTATE_H

#include "snn/Runtime/Checkpoint.h"
#include "snn/Runtime/FlatShardLayout.h"
#include "snn/Runtime/Optimizer.h"

#include <string>
#include <vector>

namespace snn::runtime {

class ParameterStore;

/// `values` (the piece's elements, 1-D) as a checkpoint piece of parameter
/// `name` of shape `fullShape`.
CheckpointTensor parameterPiece(const std::string &name,
                                const at::Tensor &values,
                                const ShardPiece &piece,
                                std::vector<int64_t> fullShape);

/// The piece's optimizer state as a checkpoint entry.
CheckpointOptimizerEntry statePiece(const std::string &name,
                                    const ParamState &state,
                                    const ShardPiece &piece);

/// The slice of a whole parameter's state that `piece` covers.
ParamState sliceParamState(const ParamState &whole, const ShardPiece &piece);

/// Bytes of the defined state tensors.
int64_t stateBytes(const std::vector<ParamState> &states);

/// The buffers of `store` as whole checkpoint entries (every rank of a
/// sharded run saves them; they are replicated).
void captureBuffers(const ParameterStore &store, CheckpointState &state);

} // namespace snn::runtime

#endif // SNN_RUNTIME_SHARDPIECESTATE_H
