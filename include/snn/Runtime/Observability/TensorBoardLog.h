//===- TensorBoardLog.h - The training log as TensorBoard scalars -*- C++ -*-===//
//
// `snn-run train --tensorboard DIR` follows the run's JSON-lines log: every
// line MetricsLog writes is handed to event(), and the numbers of step and
// epoch events become scalars (docs/observability.md lists the tags). Reading
// the log's own lines keeps both outputs equal, fields added to the log later
// included, and makes the TensorBoard side optional for every other reader.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_OBSERVABILITY_TENSORBOARDLOG_H
#define SNN_RUNTIME_OBSERVABILITY_TENSORBOARDLOG_H

#include "snn/Runtime/Observability/EventFileWriter.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace snn::runtime {

/// The scalars of one log line and the step they belong to.
struct LogScalars {
  int64_t step = 0;
  std::vector<Scalar> scalars;
};

/// A step event's scalars at its "step"; an epoch event's at `lastStep`
/// (the step that ended the epoch); nothing for other events or a line
/// that is not a JSON object. Fields a line lacks (or holds as null, a
/// NaN's JSON form) give no scalar.
std::optional<LogScalars> scalarsOfLogLine(const std::string &line,
                                           int64_t lastStep);

class TensorBoardLog {
public:
  /// Creates the event file in `dir` (EventFileWriter.h).
  explicit TensorBoardLog(const std::string &dir) : writer(dir) {}

  /// One line of the log; written and flushed when it holds scalars.
  void event(const std::string &line);

  const std::string &path() const { return writer.path(); }

private:
  EventFileWriter writer;
  int64_t lastStep = 0;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_OBSERVABILITY_TENSORBOARDLOG_H
