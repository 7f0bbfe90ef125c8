//===- Progress.h - Training progress on stderr -----------------*- C++ -*-===//
//
// On a terminal a one-line bar is redrawn in place (\r) a few times a
// second; otherwise (a log file, CI) a plain line is printed at most every
// few seconds, so redirected output stays readable. Every epoch ends with a
// summary line either way.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_TRAINING_PROGRESS_H
#define SNN_RUNTIME_TRAINING_PROGRESS_H

#include "snn/Runtime/Optim/Metrics.h"
#include "snn/Runtime/Support/EnumNames.h"

#include <chrono>
#include <cstdio>
#include <string>

namespace snn::runtime {

/// What --progress asks for; Auto becomes a Mode once stderr is known.
enum class ProgressSetting { Auto, Bar, Lines, None };

inline constexpr EnumNames<ProgressSetting, 4> kProgressSettingNames{
    "--progress",
    "mode",
    {{{ProgressSetting::Auto, "auto"},
      {ProgressSetting::Bar, "bar"},
      {ProgressSetting::Lines, "lines"},
      {ProgressSetting::None, "none"}}}};

class Progress {
public:
  enum class Mode { Off, Bar, Lines };

  /// `Mode` is chosen from stderr: Bar on a terminal, Lines otherwise.
  static Mode detectMode();
  /// The mode --progress `setting` gives (Auto: detectMode()).
  static Mode modeFor(ProgressSetting setting);

  Progress(Mode mode, int64_t totalSteps, int64_t batchesPerEpoch,
           std::FILE *out = stderr);

  /// After the step whose batch index in its epoch is `batch`.
  void step(const StepMetrics &metrics, int64_t batch);
  void epoch(const EpochMetrics &metrics);
  /// Ends a bar line that is still open.
  void finish();
  /// "warning: TEXT" on a line of its own, in every mode (Off included: a
  /// warning is not progress).
  void warning(const std::string &text);

private:
  using Clock = std::chrono::steady_clock;
  void drawBar(const StepMetrics &metrics, int64_t batch);
  void printLine(const StepMetrics &metrics, int64_t batch);
  void endBar();

  Mode mode;
  int64_t totalSteps;
  int64_t batchesPerEpoch;
  std::FILE *out;
  Clock::time_point lastPrint;
  bool barOpen = false;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_TRAINING_PROGRESS_H
