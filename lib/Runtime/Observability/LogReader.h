//===- LogReader.h - Reading a JSON-lines training log ----------*- C++ -*-===//
//
// Private to Observability: the report reads the logs `snn-run train --log`
// writes (docs/training.md, "Outputs") with nlohmann's ordered JSON, so that
// an object's keys (a step's firing rates per layer) keep the log's order.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_OBSERVABILITY_LOGREADER_H
#define SNN_RUNTIME_OBSERVABILITY_LOGREADER_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace snn::runtime {

using LogJson = nlohmann::ordered_json;

/// One event of a log and where it is: "PATH:LINE" in messages.
struct LogEvent {
  std::string where;
  LogJson event;
  const std::string &kind() const { return event["event"].get_ref<const std::string &>(); }
};

/// Every event of the JSON-lines file `path`, in file order; blank lines
/// skipped. Throws Error "PATH:LINE: ..." for a line that is not a JSON
/// object with a string "event", or "PATH: ..." when it cannot be read. A
/// last line without its newline that does not parse (a run stopped while
/// writing it) is left out with a warning on stderr.
std::vector<LogEvent> readLogEvents(const std::string &path);

/// nlohmann's parse error message as "column C: REASON", and its line into
/// `line` (left as it is when the message names none).
std::string parseErrorReason(const std::string &what, int64_t &line);

/// event[key] as a number; Error "WHERE: EVENT event: 'KEY' ..." when it is
/// missing or not a number (null, a NaN's form in the log, reads as NaN
/// when `nullable`).
double requireNumber(const LogEvent &event, const char *key, bool nullable = true);
int64_t requireInteger(const LogEvent &event, const char *key);

} // namespace snn::runtime

#endif // SNN_RUNTIME_OBSERVABILITY_LOGREADER_H
