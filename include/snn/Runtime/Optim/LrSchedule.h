//===- LrSchedule.h - Learning rate per optimizer step ----------*- C++ -*-===//
//
// Closed forms of docs/training.md, evaluated per step s = 0, 1, ...: the
// learning rate depends only on s, so a resumed run needs nothing but the
// step count to continue the schedule.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_OPTIM_LRSCHEDULE_H
#define SNN_RUNTIME_OPTIM_LRSCHEDULE_H

#include "snn/Runtime/Support/EnumNames.h"

#include <cstdint>
#include <string>

namespace snn::runtime {

enum class ScheduleKind { Constant, Step, Cosine };

/// --schedule's names, also in a checkpoint's settings (do not rename).
inline constexpr EnumNames<ScheduleKind, 3> kScheduleKindNames{
    "--schedule",
    "schedule",
    {{{ScheduleKind::Constant, "constant"},
      {ScheduleKind::Step, "step"},
      {ScheduleKind::Cosine, "cosine"}}}};

/// "constant", "step" or "cosine"; throws Error naming --schedule otherwise.
inline ScheduleKind parseScheduleKind(const std::string &name) {
  return kScheduleKindNames.parse(name);
}
inline const char *scheduleKindName(ScheduleKind kind) {
  return kScheduleKindNames.name(kind);
}

struct LrSchedule {
  ScheduleKind kind = ScheduleKind::Constant;
  double lr = 0.0;
  /// step: lr * gamma^floor(s / stepSize).
  int64_t stepSize = 1;
  double gamma = 0.1;
  /// cosine: eta_min + (lr - eta_min) * (1 + cos(pi * s / totalSteps)) / 2.
  double etaMin = 0.0;
  int64_t totalSteps = 1;

  /// The learning rate of optimizer step `step` (0-based).
  double at(int64_t step) const;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_OPTIM_LRSCHEDULE_H
