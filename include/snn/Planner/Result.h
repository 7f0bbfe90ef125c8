//===- Result.h - Value-or-error for the planner ------------------*- C++ -*-===//
//
// The planner is plain C++ (no MLIR, no exceptions: it links into -fno-exceptions
// compiler passes), so fallible functions return a value or an error message.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_PLANNER_RESULT_H
#define SNN_PLANNER_RESULT_H

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace snn::planner {

/// Why a planner function failed. `opIndex` names the model op the error is about
/// (an index into ModelInfo::ops), or -1 when it is about the request as a whole.
struct Error {
  std::string message;
  int opIndex = -1;
};

inline Error makeError(std::string message, int opIndex = -1) {
  return Error{std::move(message), opIndex};
}

template <typename T> class Result {
public:
  Result(T value) : value_(std::move(value)) {}
  Result(Error error) : error_(std::move(error)) {}

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }

  const T &value() const {
    assert(ok() && "no value in a failed Result");
    return *value_;
  }
  T &value() {
    assert(ok() && "no value in a failed Result");
    return *value_;
  }
  const T &operator*() const { return value(); }
  const T *operator->() const { return &value(); }

  const Error &error() const {
    assert(!ok() && "no error in a successful Result");
    return *error_;
  }

private:
  std::optional<T> value_;
  std::optional<Error> error_;
};

/// For checks that produce nothing but may fail.
struct Ok {};
using Status = Result<Ok>;

} // namespace snn::planner

#endif
