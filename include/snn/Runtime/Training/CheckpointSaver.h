//===- CheckpointSaver.h - Checkpoints that do not stall training -*- C++ -*-===//
//
// A save point takes the state it saves (Trainer::capture copies every
// tensor; gathering a tp or pp run's pieces and starting a sharded save are
// collectives, so they stay on the training thread, in program order on
// every rank) and hands the writing - files, fsync, rename, `latest` - to a
// BackgroundWriter while training goes on. The next save point, the end of
// the run, or a look after each step (whole checkpoints) takes its result:
// a sharded save is published only then, once every rank agreed that its
// shard is written. A failed save leaves the previous checkpoint the latest
// and no temporary directory; the run then stops with one error line, or
// with --checkpoint-errors continue warns and tries again at the next save
// point (docs/checkpoints.md, "Saving in the background").
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_TRAINING_CHECKPOINTSAVER_H
#define SNN_RUNTIME_TRAINING_CHECKPOINTSAVER_H

#include "snn/Runtime/Checkpoint/BackgroundWriter.h"
#include "snn/Runtime/Checkpoint/CheckpointDirectory.h"
#include "snn/Runtime/Checkpoint/ShardedCheckpoint.h"
#include "snn/Runtime/Support/EnumNames.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace snn::runtime {

/// --checkpoint-errors: what a failed save does to the run.
enum class CheckpointErrors { Stop, Continue };
inline constexpr EnumNames<CheckpointErrors, 2> kCheckpointErrorsNames{
    "--checkpoint-errors",
    "policy",
    {{{CheckpointErrors::Stop, "stop"}, {CheckpointErrors::Continue, "continue"}}}};

struct CheckpointPolicy {
  /// false (--checkpoint-sync): every save is written before training goes on.
  bool background = true;
  CheckpointErrors onError = CheckpointErrors::Stop;
};

class CheckpointSaver {
public:
  /// `warn` prints one warning line; it is called on the rank that speaks
  /// for a save (the writer of a whole checkpoint, rank 0 of a sharded one).
  CheckpointSaver(CheckpointDirectory &dir, CheckpointPolicy policy,
                  std::function<void(const std::string &)> warn);
  /// Waits for the save in flight: a whole checkpoint publishes itself, a
  /// shard stays unpublished (its temporary directory is pruned later).
  ~CheckpointSaver() = default;

  /// Saves `state` (a copy nothing else changes), a whole checkpoint this
  /// rank alone writes and publishes. The writer first looks for a NaN or an
  /// infinity in it (it reads every value anyway): then nothing is written
  /// and complete() stops the run, whatever the policy.
  void saveWhole(CheckpointState state);
  /// This rank's shard of a sharded checkpoint; collective over `group`,
  /// which must outlive the save.
  void saveShard(CheckpointState state, const dist::Group &group);
  /// Whole checkpoints: takes the result of a save that has finished, without
  /// waiting for one still running.
  void poll();
  /// Waits for the save in flight and takes its result (for a shard: agrees
  /// over its group and publishes, collective). Every save starts with it.
  /// Throws Error for a failed save (CheckpointErrors::Stop) and for a state
  /// that was not finite.
  void complete();

  /// A background save is being written now.
  bool writing() const { return writer.running(); }
  const CheckpointPolicy &policy() const { return options; }

private:
  /// The save of `step` failed: Error, or a warning with Continue.
  void failed(int64_t step, const std::string &cause, bool speaks);

  CheckpointDirectory &dir;
  CheckpointPolicy options;
  std::function<void(const std::string &)> warn;
  BackgroundWriter writer;
  int64_t pendingStep = -1;
  /// A pending whole save's refusal of non-finite values (nonFiniteRefusal),
  /// written by the writer's thread.
  std::shared_ptr<std::string> refusal;
  /// A pending shard: what its shards.json records and the group that
  /// publishes it.
  std::optional<ShardIndex> shardIndex;
  const dist::Group *shardGroup = nullptr;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_TRAINING_CHECKPOINTSAVER_H
