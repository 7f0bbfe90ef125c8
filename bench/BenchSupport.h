//===- BenchSupport.h - What the kernel benchmarks share ----------*- C++ -*-===//
//
// The timing and flag reading of the snn-bench-* micro-benchmarks.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_BENCH_BENCHSUPPORT_H
#define SNN_BENCH_BENCHSUPPORT_H

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

namespace snn::bench {

/// Median seconds of `call` over `repeats` timed runs after one warm-up.
inline double medianSeconds(const std::function<void()> &call, int repeats) {
  using Clock = std::chrono::steady_clock;
  call();
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    Clock::time_point start = Clock::now();
    call();
    times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

/// The positive integer after `name` in argv, at least 1, or `fallback`.
inline int parseFlag(int argc, char **argv, const char *name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0)
      return std::max(1, std::atoi(argv[i + 1]));
  return fallback;
}

} // namespace snn::bench

#endif // SNN_BENCH_BENCHSUPPORT_H
