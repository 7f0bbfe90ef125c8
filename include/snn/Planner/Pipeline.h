//===- Pipeline.h - Pipeline stages, microbatches and schedules ---*- C++ -*-===//
//
// The reference package's pipeline rules, kept exactly (tests use its examples): microbatch
// counts, the stages that recompute, stage layouts and schedules. The stage units a layout
// counts are in PipelineUnits.h.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_PLANNER_PIPELINE_H
#define SNN_PLANNER_PIPELINE_H

#include "snn/Planner/Result.h"
#include "snn/Schema/Enums.h"

#include <cstdint>
#include <string>
#include <vector>

namespace snn::planner {

/// The largest m in [S, min(B, 4S)] that divides B; requires B >= S > 0.
/// (8, 8) -> 8; (128, 2) -> 8; (37, 8) -> error.
Result<int64_t> recommendedPipelineMicrobatches(int64_t batch, int64_t stages);

/// The k = max(1, min(n, round(n * ratio))) costliest stages (ties to the lower index),
/// sorted ascending; ratio must be finite and in (0, 1]. `round` rounds half to even, like
/// the reference's Python.
Result<std::vector<int64_t>> recommendPipelineMemoptStages(const std::vector<double> &costs,
                                                           double ratio = 0.5);

/// Contiguous partition of `unitCosts` into `stages` non-empty stages that minimises the
/// largest stage cost; returns the number of units per stage. Needs units >= stages >= 1.
std::vector<int64_t> balancedStageLayout(const std::vector<double> &unitCosts, int64_t stages);

/// Parses an explicit layout "a|b|c": one count per stage, zero allowed, summing to
/// `units`.
Result<std::vector<int64_t>> parseStageLayout(const std::string &text, int64_t stages,
                                              int64_t units);
std::string formatStageLayout(const std::vector<int64_t> &counts);

using Schedule = schema::PipelineSchedule;

Result<Schedule> parseSchedule(const std::string &name);
inline const char *scheduleName(Schedule schedule) { return schema::nameOf(schedule); }
/// gpipe and 1f1b need 1 virtual stage; interleaved_1f1b and zero_bubble need >= 2;
/// every schedule needs microbatches >= stages x virtual stages.
Status validateSchedule(Schedule schedule, int64_t stages, int64_t virtualStages,
                        int64_t microbatches);

} // namespace snn::planner

#endif
