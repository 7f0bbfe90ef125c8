//===- Plan.h - What recommend() decides --------------------------*- C++ -*-===//
#ifndef SNN_PLANNER_PLAN_H
#define SNN_PLANNER_PLAN_H

#include "snn/Planner/Estimate.h"
#include "snn/Planner/Mode.h"
#include "snn/Planner/Pipeline.h"
#include "snn/Planner/PipelineUnits.h"
#include "snn/Planner/TensorParallel.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace snn::planner {

struct Plan {
  Mode mode = Mode::None;
  Objective objective = Objective::Speed;
  OptimizerStrategy optimizer = OptimizerStrategy::None;
  int memoptLevel = 0;
  std::vector<std::string> meshAxes;
  std::vector<int64_t> meshShape;
  int dpMeshDim = -1, tpMeshDim = -1, ppMeshDim = -1;
  int64_t ppMicrobatches = 0;
  std::optional<Schedule> ppSchedule;
  int64_t ppVirtualStages = 0;
  std::vector<int64_t> ppLayout;
  std::vector<int64_t> ppMemoptStages;
  /// The cost of each logical stage, FLOP-equivalents (units per stage without an
  /// estimator): what the memopt stages were chosen by.
  std::vector<double> ppStageCosts;
  bool ppDelayWgrad = false;
  std::string decidedBy; ///< "cost-model", "reference-table" or "forced"
  std::vector<std::string> rationale;
  std::vector<std::string> notes;
  std::vector<Estimate> candidates; ///< what the cost model compared (may be empty)
  std::optional<Estimate> chosen;
  TPLayout tensorParallel;          ///< for tp and fsdp_tp
  std::vector<PipelineUnit> units;  ///< for pp
  std::vector<int64_t> opStage;     ///< logical pp stage per op (pp only)
};

} // namespace snn::planner

#endif // SNN_PLANNER_PLAN_H
