//===- Error.h - Runtime errors and their one-line report -------*- C++ -*-===//
//
// Every failure the user can cause (bad file, bad shape, unknown op) is thrown
// as snn::runtime::Error with a message that already names the culprit. Tools
// turn any exception into a single `error: ...` line and exit code 1.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_SUPPORT_ERROR_H
#define SNN_RUNTIME_SUPPORT_ERROR_H

#include <exception>
#include <functional>
#include <stdexcept>
#include <string>

namespace snn::runtime {

/// A user-facing failure; the message is one line and names the file, node or
/// flag at fault.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The message of an exception as one line: c10 backtraces dropped, and
/// Gloo's source location prefix ("[./gloo/transport/tcp/pair.cc:598] ")
/// removed. Every tool and the distributed layer report every failure this
/// way.
std::string describeException(const std::exception &e);

/// Runs `body`; converts any exception into `error: <message>` on stderr.
/// Returns the body's exit code, or 1 after an error.
int runReportingErrors(const std::function<int()> &body);

} // namespace snn::runtime

#endif // SNN_RUNTIME_SUPPORT_ERROR_H
