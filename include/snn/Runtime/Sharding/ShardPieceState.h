//===- ShardPieceState.h - Optimizer state of a rank's pieces ---*- C++ -*-===//
//
// ZeRO and fsdp keep optimizer state per ShardPiece (the part of one
// parameter in this rank's chunk). The update is elementwise, so a piece's
// state is exactly the slice of the whole parameter's state; these helpers
// move between the two and write pieces into checkpoints.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_SHARDING_SHARDPIECESTATE_H
#define SNN_RUNTIME_SHARDING_SHARDPIECESTATE_H

#include "snn/Runtime/Checkpoint/Checkpoint.h"
#include "snn/Runtime/Sharding/FlatParameterGroup.h"
#include "snn/Runtime/Sharding/FlatShardLayout.h"
#include "snn/Runtime/Optim/Optimizer.h"

#include <functional>
#include <map>
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

/// Starts a rank's part of a sharded checkpoint: `state`'s model and
/// optimizer entries are replaced by the buffers of `store` (whole: they are
/// replicated), the optimizer kind and `shard`; the pieces follow
/// (PieceOptimizer::capture).
void beginShardCapture(CheckpointState &state, OptimizerKind kind,
                       const ParameterStore &store, CheckpointShard shard);

/// Checks that `state` holds `kind`'s state and returns its whole entries
/// for `names`, by name (throws Error naming `where` otherwise).
std::map<std::string, const CheckpointOptimizerEntry *>
wholeOptimizerEntries(const CheckpointState &state, OptimizerKind kind,
                      const std::vector<std::string> &names,
                      const std::string &where);

/// The optimizer state of a FlatParameterGroup's own pieces, as ZeRO and
/// fsdp keep it. `chunk` is always this rank's [chunk] of the group's values
/// (the buffer's own chunk under ZeRO, the kept shard under fsdp).
class PieceOptimizer {
public:
  /// `names`: the group's parameters, in its order. `flat` must outlive this.
  PieceOptimizer(const FlatParameterGroup &flat, std::vector<std::string> names);

  /// Updates `chunk` in place; `gradOf(piece)` is the piece's gradient
  /// (undefined: skipped, as torch.optim skips a missing grad).
  void step(const OptimizerConfig &config, double lr, const at::Tensor &chunk,
            const std::function<at::Tensor(const ShardPiece &)> &gradOf);
  /// Appends every own piece (values from `chunk`) and its state.
  void capture(const at::Tensor &chunk, CheckpointState &state) const;
  /// The own pieces' slices of whole entries (wholeOptimizerEntries).
  void restore(const std::map<std::string, const CheckpointOptimizerEntry *> &entries);
  int64_t stateBytes() const;

private:
  const FlatParameterGroup &flat;
  std::vector<std::string> names;
  std::vector<ParamState> states; // per own piece
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_SHARDING_SHARDPIECESTATE_H
