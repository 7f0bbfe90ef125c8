//===- RunReport.h - What `snn-run report` shows of a run -------*- C++ -*-===//
//
// Reads a run's `--log` file, the per-rank logs beside it (LOG.rank<R>.jsonl)
// and optionally its pipeline `--trace`, and gathers what the report's views
// draw into one JSON document, which the page embeds (ReportPage.h). Every
// problem with the input is an Error naming the file and line.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_OBSERVABILITY_RUNREPORT_H
#define SNN_RUNTIME_OBSERVABILITY_RUNREPORT_H

#include <string>

namespace snn::runtime {

/// The report's data as JSON text (docs/observability.md):
///  "steps": columns step, epoch, loss, accuracy, lr, samples_per_s, seconds;
///  "epochs": [{epoch, end_step, loss, accuracy, eval_loss, eval_accuracy}];
///  "firing_rates": [{layer, step: [...], rate: [...]}];
///  "ranks": [{rank, file, mode, step: [...], seconds: [...]}];
///  "plan": [{rank, predicted, measured, ratio}] (the end events' plan_check);
///  "trace": null or {file, ranks, categories, steps, spans: [[rank, step,
///  ts_us, dur_us, category, name], ...], total_steps}.
/// A step logged twice (a run resumed from an earlier checkpoint appends
/// to its log) keeps its last event. `tracePath` may be empty.
std::string reportData(const std::string &logPath, const std::string &tracePath);

} // namespace snn::runtime

#endif // SNN_RUNTIME_OBSERVABILITY_RUNREPORT_H
