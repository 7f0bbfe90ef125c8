//===- ReportCommand.h - The `snn-run report` command -----------*- C++ -*-===//
//
// Writes one self-contained HTML page of a finished (or running) training
// run from its `--log` file, the rank logs beside it and optionally its
// pipeline `--trace` (docs/observability.md).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_COMMANDS_REPORTCOMMAND_H
#define SNN_RUNTIME_COMMANDS_REPORTCOMMAND_H

#include <string>

namespace snn::runtime {

struct ReportOptions {
  std::string logPath;
  std::string tracePath; ///< optional
  std::string outputPath;
};

/// Reads everything before it writes: bad input is one Error naming the file
/// and line, and the page appears whole (a temporary renamed) or not at all.
void runReport(const ReportOptions &options);

} // namespace snn::runtime

#endif // SNN_RUNTIME_COMMANDS_REPORTCOMMAND_H
