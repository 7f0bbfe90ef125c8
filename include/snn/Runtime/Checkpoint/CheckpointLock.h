//===- CheckpointLock.h - One job per checkpoint directory ------*- C++ -*-===//
//
// Two jobs saving into one `--checkpoint DIR` would prune and replace each
// other's checkpoints. The job's rank 0 holds an exclusive flock on
// DIR/.lock for the whole run (the other ranks of the job write under it and
// take nothing), and records its pid and host there for the message a second
// job gets. flock, not a pid file: the kernel releases it when the holder
// exits or is killed, so a crashed job never blocks the next one.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_CHECKPOINT_CHECKPOINTLOCK_H
#define SNN_RUNTIME_CHECKPOINT_CHECKPOINTLOCK_H

#include <string>

namespace snn::runtime {

class CheckpointLock {
public:
  /// Creates `dir` if needed and locks DIR/.lock. Throws Error
  /// "--checkpoint DIR is in use by another job (pid P)" while another
  /// process holds it. A file system without locks is not locked (held()).
  explicit CheckpointLock(const std::string &dir);
  ~CheckpointLock();
  CheckpointLock(const CheckpointLock &) = delete;
  CheckpointLock &operator=(const CheckpointLock &) = delete;

  bool held() const { return fd >= 0; }

  /// "DIR/.lock".
  static std::string pathFor(const std::string &dir);

private:
  int fd = -1;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_CHECKPOINT_CHECKPOINTLOCK_H
