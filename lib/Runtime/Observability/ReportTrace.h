//===- ReportTrace.h - A pipeline trace for the report ----------*- C++ -*-===//
//
// Private to Observability: the Chrome trace `snn-run train --trace` writes
// (PipelineTrace.h: spans of ph "X", tid = rank, ts and dur in microseconds,
// args.step) as the report's schedule view draws it.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_OBSERVABILITY_REPORTTRACE_H
#define SNN_RUNTIME_OBSERVABILITY_REPORTTRACE_H

#include "LogReader.h"

#include <string>

namespace snn::runtime {

/// {file, ranks, categories, steps, spans: [[rank, step, ts, dur,
/// category index, name], ...], total_steps}: the spans of the first steps,
/// whole steps up to kMaxReportSpans spans, so that a long run's page stays
/// small. Error "PATH:LINE: ..." for a file that is not such a trace.
LogJson traceSection(const std::string &path);

constexpr size_t kMaxReportSpans = 20000;

} // namespace snn::runtime

#endif // SNN_RUNTIME_OBSERVABILITY_REPORTTRACE_H
