//===- BackgroundWriter.h - One checkpoint write at a time ------*- C++ -*-===//
//
// Writing a checkpoint (files, fsync, rename) takes long next to a training
// step; its tensors were already copied, so it can run on a thread of its own
// while training continues. At most one job is in flight: its result must be
// taken (wait) before the next starts, so saves publish in order and a failed
// one is reported before another begins. Without a background thread the job
// runs inside start() and wait() returns its result: one code path for both.
// The thread runs at a lower priority (nice +10) than training.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_CHECKPOINT_BACKGROUNDWRITER_H
#define SNN_RUNTIME_CHECKPOINT_BACKGROUNDWRITER_H

#include <atomic>
#include <functional>
#include <string>
#include <thread>

namespace snn::runtime {

class BackgroundWriter {
public:
  /// `background` false: start() runs the job before it returns.
  explicit BackgroundWriter(bool background = true);
  /// Waits for the job in flight; its result is dropped.
  ~BackgroundWriter();
  BackgroundWriter(const BackgroundWriter &) = delete;
  BackgroundWriter &operator=(const BackgroundWriter &) = delete;

  bool background() const { return threaded; }

  /// Runs `job`, which reports failure by throwing. The previous job's result
  /// must have been taken by wait() (std::logic_error otherwise).
  void start(std::function<void()> job);
  /// A job was started and wait() has not taken its result yet.
  bool pending() const { return hasJob; }
  /// The pending job is still running (never blocks).
  bool running() const { return hasJob && !finished.load(); }
  /// Blocks until the pending job ends and takes its result: the message of
  /// what it threw, empty when it succeeded or when no job is pending.
  std::string wait();

private:
  bool threaded;
  bool hasJob = false;
  std::atomic<bool> finished{false};
  std::string error;
  std::thread worker;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_CHECKPOINT_BACKGROUNDWRITER_H
