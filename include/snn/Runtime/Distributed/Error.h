//===- Error.h - Errors of the distributed layer ----------------*- C++ -*-===//
//
// Every failure of launch, rendezvous or a collective is thrown as
// snn::dist::DistributedError with a one-line message that names the rank,
// the peer, the variable or the flag at fault. Tools print it as
// `error: <message>` (snn::runtime::runReportingErrors does exactly that for
// any std::exception).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_DISTRIBUTED_ERROR_H
#define SNN_RUNTIME_DISTRIBUTED_ERROR_H

#include <exception>
#include <stdexcept>
#include <string>

namespace snn::dist {

/// A user-facing failure of the distributed layer (one line, no "error: ").
class DistributedError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The message of an exception as one line: c10 backtraces dropped, and
/// Gloo's source location prefix ("[./gloo/transport/tcp/pair.cc:598] ")
/// removed.
std::string describeException(const std::exception &e);

} // namespace snn::dist

#endif // SNN_RUNTIME_DISTRIBUTED_ERROR_H
