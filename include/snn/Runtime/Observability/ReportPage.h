//===- ReportPage.h - The `snn-run report` HTML page ------------*- C++ -*-===//
//
// One self-contained page: ReportPage.html (inline CSS and script, built
// into snn-run) with the run's data (RunReport.h) embedded as JSON, which
// the page's script draws as inline SVG. No network access, no libraries.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_OBSERVABILITY_REPORTPAGE_H
#define SNN_RUNTIME_OBSERVABILITY_REPORTPAGE_H

#include <string>

namespace snn::runtime {

/// The page of `dataJson` (reportData()), titled after `logPath`.
std::string reportPage(const std::string &dataJson, const std::string &logPath);

} // namespace snn::runtime

#endif // SNN_RUNTIME_OBSERVABILITY_REPORTPAGE_H
