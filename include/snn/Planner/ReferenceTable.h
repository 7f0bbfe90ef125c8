//===- ReferenceTable.h - The reference package's decision table --*- C++ -*-===//
//
// The fallback when the IR gives no model information, or when the cost model is switched
// off (docs/reference-api.md, section 3; the two deliberate readings: docs/planner.md).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_PLANNER_REFERENCETABLE_H
#define SNN_PLANNER_REFERENCETABLE_H

#include "snn/Planner/Mode.h"
#include "snn/Planner/PlanRequest.h"

#include <cstdint>
#include <string>

namespace snn::planner {

/// The reference package's decision table (docs/reference-api.md), for world size W and batch B.
struct TableDecision {
  Mode mode = Mode::None;
  OptimizerStrategy optimizer = OptimizerStrategy::None;
  int memoptLevel = 0;
  int64_t dp = 1, tp = 1, pp = 1, virtualStages = 0;
  std::string reason;
};
TableDecision referenceTableDecision(Objective objective, int64_t worldSize, int64_t batch,
                                     bool tpAvailable, bool hasTrainableParams,
                                     const Features &features);

} // namespace snn::planner

#endif // SNN_PLANNER_REFERENCETABLE_H
