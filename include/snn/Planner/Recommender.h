//===- Recommender.h - Choosing a parallel mode -------------------*- C++ -*-===//
//
// recommend() picks a mode for an objective, a topology, a batch size, feature flags and
// a per-rank memory budget. With model information it estimates every mode that can use
// the world (cost model, see docs/planner.md); without it, or when asked, it applies the
// reference package's decision table. A forced mode skips the choice but not the checks.
//
// The request and its model are in PlanRequest.h, the answer in Plan.h.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_PLANNER_RECOMMENDER_H
#define SNN_PLANNER_RECOMMENDER_H

#include "snn/Planner/Plan.h"
#include "snn/Planner/PlanRequest.h"
#include "snn/Planner/Result.h"
// For lib/Runtime/Commands/CalibrateCommand.cpp, which takes formatBytes and formatSeconds
// from here; other code includes Units.h itself.
#include "snn/Planner/Units.h"

namespace snn::planner {

Result<Plan> recommend(const PlannerInput &input, const PlanRequest &request);

} // namespace snn::planner

#endif
