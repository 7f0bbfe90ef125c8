//===- Error.h - Errors of the distributed layer ----------------*- C++ -*-===//
//
// Every failure of launch, rendezvous or a collective is thrown as
// snn::dist::DistributedError with a one-line message that names the rank,
// the peer, the variable or the flag at fault. Tools print it as
// `error: <message>` (snn::runtime::runReportingErrors does exactly that for
// any std::exception; describeException, from Support, makes the line).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_DISTRIBUTED_ERROR_H
#define SNN_RUNTIME_DISTRIBUTED_ERROR_H

#include "snn/Runtime/Support/Error.h"

#include <stdexcept>

namespace snn::dist {

/// A user-facing failure of the distributed layer (one line, no "error: ").
class DistributedError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The one-line message of any exception (Support/Error.h).
using runtime::describeException;

} // namespace snn::dist

#endif // SNN_RUNTIME_DISTRIBUTED_ERROR_H
