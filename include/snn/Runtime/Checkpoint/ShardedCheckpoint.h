//===- ShardedCheckpoint.h - Checkpoints of ZeRO and fsdp runs --*- C++ -*-===//
//
// A sharded run (dp + zero, fsdp) saves one checkpoint per rank, each with
// only that rank's pieces of the parameters and optimizer state, plus a
// `shards.json` naming them (docs/checkpoints.md, "Sharded checkpoints"):
//
//   step-00000040/shards.json
//   step-00000040/rank0/{checkpoint.json,tensors.bin}
//   step-00000040/rank1/{checkpoint.json,tensors.bin}
//
// Pieces are recorded by parameter name and element offset, not by the rank
// layout, so readAnyCheckpoint can put them back together into one whole
// checkpoint, which then loads under any rank count and any mode.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_CHECKPOINT_SHARDEDCHECKPOINT_H
#define SNN_RUNTIME_CHECKPOINT_SHARDEDCHECKPOINT_H

#include "snn/Runtime/Checkpoint/Checkpoint.h"
#include "snn/Runtime/Checkpoint/CheckpointDirectory.h"
#include "snn/Runtime/Distributed/Group.h"

#include <string>
#include <vector>

namespace snn::runtime {

constexpr const char *kShardIndexFile = "shards.json";
constexpr const char *kShardIndexFormat = "spikemesh-sharded-checkpoint";

/// The checkpoint in `dir`, whole or sharded (then merged). Throws Error
/// naming the file for a missing or corrupt rank, ranks that disagree on the
/// position, a rank whose shard belongs to another run (its run id differs
/// from shards.json's or the other ranks'), or pieces that do not cover a
/// tensor exactly once.
CheckpointState readAnyCheckpoint(const std::string &dir);

/// Puts the ranks' checkpoints (rank order) together into one whole one:
/// pieces concatenated, position, settings, buffers and generator state from
/// rank 0. Every rank must carry the same run id (the check is skipped only
/// when none has one); an Error names the rank that differs. `where` names
/// the checkpoint in messages.
CheckpointState mergeShards(const std::vector<CheckpointState> &ranks,
                            const std::string &where);

/// Collective over `group` (every rank calls it with its own `state`, whose
/// `shard` is filled in): rank R writes DIR/step-X.tmp/rank<R>, rank 0 then
/// writes shards.json and publishes the directory atomically. Returns the
/// path. If any rank fails to write, every rank throws Error and the
/// previous checkpoints stay as they were.
std::string saveShardedCheckpoint(CheckpointDirectory &dir,
                                  const CheckpointState &state,
                                  const dist::Group &group);

/// saveShardedCheckpoint in three parts, so that the files can be written in
/// the background while the collective parts run on the training thread, in
/// the same order on every rank (docs/checkpoints.md, "Saving in the
/// background"). An Error of a collective part is thrown on every rank with
/// the same message ("rank R: cause" when the group has several ranks).
///
/// Collective: rank 0 creates the temporary directory of `step`.
void beginShardedSave(CheckpointDirectory &dir, int64_t step, const dist::Group &group);
/// Not collective: writes this rank's rank<R>/ into the temporary directory
/// of `state.step` and syncs it (R = state.shard.rank).
void writeShard(const CheckpointDirectory &dir, const CheckpointState &state);

/// What shards.json records.
struct ShardIndex {
  int64_t step = 0;
  uint64_t runId = 0;
  std::string mode;
  int worldSize = 0;
};
ShardIndex shardIndexOf(const CheckpointState &state, const dist::Group &group);

/// Collective: `writeError` is this rank's writeShard failure (empty: it
/// wrote its shard). When every rank wrote its shard, rank 0 writes
/// shards.json and publishes the checkpoint; if any failed, or publishing
/// did, rank 0 removes the temporary directory and every rank throws.
/// Returns the published path.
std::string publishShardedSave(CheckpointDirectory &dir, const ShardIndex &index,
                               const dist::Group &group, const std::string &writeError);

} // namespace snn::runtime

#endif // SNN_RUNTIME_CHECKPOINT_SHARDEDCHECKPOINT_H
