//===- CheckpointDirectory.h - Publishing checkpoints -----------*- C++ -*-===//
//
// `--checkpoint DIR` holds `step-XXXXXXXX/` checkpoints (XXXXXXXX = optimizer
// steps done, zero-padded) and a `latest` file naming the newest. A save
// writes `step-XXXXXXXX.tmp/`, renames it into place, then replaces `latest`
// and finally removes checkpoints beyond the newest K. A crash at any point
// leaves the previous complete checkpoint, and `latest` never names an
// incomplete one.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_CHECKPOINT_CHECKPOINTDIRECTORY_H
#define SNN_RUNTIME_CHECKPOINT_CHECKPOINTDIRECTORY_H

#include "snn/Runtime/Checkpoint/Checkpoint.h"

#include <string>
#include <vector>

namespace snn::runtime {

class CheckpointDirectory {
public:
  /// `keep` >= 1 complete checkpoints are kept after each save.
  CheckpointDirectory(std::string dir, int keep);

  const std::string &path() const { return dir; }

  /// Saves `state` as step-XXXXXXXX (replacing one of the same step) and
  /// returns its path. Throws Error if it cannot be written; the previous
  /// checkpoints are then untouched.
  std::string save(const CheckpointState &state);

  /// save() in three parts, for checkpoints written by many processes
  /// (ShardedCheckpoint.h): beginSave creates and returns the empty
  /// temporary directory of `step`; commitSave publishes it (rename, `latest`,
  /// pruning) and returns the final path; abortSave removes it.
  std::string beginSave(int64_t step);
  std::string commitSave(int64_t step);
  void abortSave(int64_t step);
  /// The temporary directory beginSave(step) creates.
  std::string tempPath(int64_t step) const;

  /// The checkpoint to resume from: the one `latest` names, or without a
  /// `latest` file the complete checkpoint with the most steps. Empty if the
  /// directory holds none.
  std::string latest() const;

  /// Complete checkpoints, oldest first.
  std::vector<std::string> list() const;

  /// "step-00000042".
  static std::string nameForStep(int64_t step);

private:
  void prune(const std::string &keepAlways) const;

  std::string dir;
  int keep;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_CHECKPOINT_CHECKPOINTDIRECTORY_H
