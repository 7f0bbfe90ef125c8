//===- PipelineTrace.h - What each rank did when, for --trace ---*- C++ -*-===//
//
// `snn-run train --trace FILE` on a pipeline: every rank records a span for
// each action it runs (forward "F s1 m3", input-gradient backward "B s1 m3",
// weight gradients "W s1 m3"), for posting each send ("send s1>s2 m3",
// "send grad s1>s0 m3") and for each wait for a tensor from another stage
// ("wait F s1 m3": idle until the inputs of that action arrived; "wait
// sends": the step's end, until its last sends were received), with
// steady-clock times. At the end the spans of all ranks are gathered and
// rank 0 writes one Chrome trace (chrome://tracing, Perfetto): traceEvents
// of ph "X" with pid 0, tid = rank, ts and dur in microseconds from the
// run's first span.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_PIPELINE_PIPELINETRACE_H
#define SNN_RUNTIME_PIPELINE_PIPELINETRACE_H

#include "snn/Runtime/Distributed/Group.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace snn::runtime {

class PipelineTrace {
public:
  using Clock = std::chrono::steady_clock;
  enum class Kind {
    Forward,
    Backward,
    WeightGrad,
    SendActivation,
    SendGradient,
    Wait,
    Recompute, ///< a recomputed stage's forward again, before its B
  };

  struct Span {
    Kind kind = Kind::Forward;
    int64_t stage = 0;
    int64_t microbatch = 0;
    /// Wait: the action waited for (0 F, 1 B; 2 the step's sends at its
    /// end); sends: the receiving stage.
    int64_t detail = 0;
    int64_t step = 0;
    Clock::time_point start, end;
  };

  void setStep(int64_t value) { step = value; }
  void record(Kind kind, int64_t stage, int64_t microbatch, int64_t detail,
              Clock::time_point start, Clock::time_point end);
  const std::vector<Span> &spans() const { return recorded; }

  /// "F s1 m3", "send s1>s2 m3", "wait B s0 m1", ...
  static std::string nameOf(const Span &span);
  /// The Chrome trace JSON of the spans of every rank (index = rank).
  static std::string chromeTrace(const std::vector<std::vector<Span>> &ranks);

  /// Collective over `world` (every rank of the run; null or invalid: this
  /// process alone): gathers every rank's spans, and the group's rank 0
  /// writes the Chrome trace to `path` (atomically).
  void write(const dist::Group *world, const std::string &path) const;

private:
  int64_t step = 0;
  std::vector<Span> recorded;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_PIPELINE_PIPELINETRACE_H
