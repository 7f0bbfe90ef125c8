//===- RankFailures.h - A rank fails with a line, never a signal (private) -*- C++ -*-===//
//
// World::initialize makes every failure of a rank's process an `error:` line
// and exit code 1 (RankFailures.cpp):
//   - SIGPIPE is ignored: a write to the socket of a peer that has exited
//     fails with EPIPE, which the collective or transfer reports as a lost
//     peer, instead of killing the writer (which the launcher then blamed);
//   - an exception that escapes any thread ends the rank with "error: rank
//     R: ..." and exit code 1 instead of std::terminate's SIGABRT: Gloo's
//     transport threads throw gloo::EnforceNotMet when a peer's message does
//     not fit the buffer posted for it, and nothing can catch it there.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_LIB_RUNTIME_DISTRIBUTED_RANKFAILURES_H
#define SNN_LIB_RUNTIME_DISTRIBUTED_RANKFAILURES_H

namespace snn::dist::detail {

/// For the process of rank `rank`; idempotent (the last rank number wins).
void installRankFailureHandlers(int rank);

} // namespace snn::dist::detail

#endif // SNN_LIB_RUNTIME_DISTRIBUTED_RANKFAILURES_H
