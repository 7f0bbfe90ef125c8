//===- LauncherWatch.h - A rank's watch on its launcher (private) -*- C++ -*-===//
//
// What a rank of `snn-run --nproc` knows of its launcher: its pid, and how long it waits
// for it to answer before it gives up on the job (WorldState::startLauncherWatch,
// LauncherWatch.cpp). The launcher's side counts on the same bound (FailureAttribution.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_LIB_RUNTIME_DISTRIBUTED_LAUNCHERWATCH_H
#define SNN_LIB_RUNTIME_DISTRIBUTED_LAUNCHERWATCH_H

#include <chrono>

namespace snn::dist::detail {

/// The environment variable the launcher passes its pid to its ranks in.
inline constexpr const char *kLauncherPidVariable = "SNN_LAUNCHER_PID";

/// How long a rank waits for its launcher to answer a ping before it gives
/// up on the job (LauncherWatch.cpp): the distributed timeout, kept within
/// kLauncherAnswerMin to 30 s (a stopped launcher must not leave ranks
/// running for a long --dist-timeout; a live one answers in microseconds).
inline constexpr std::chrono::milliseconds kLauncherAnswerMin{5000};
std::chrono::milliseconds launcherAnswerTimeout(std::chrono::milliseconds timeout);

} // namespace snn::dist::detail

#endif // SNN_LIB_RUNTIME_DISTRIBUTED_LAUNCHERWATCH_H
