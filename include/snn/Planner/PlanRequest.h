//===- PlanRequest.h - What recommend() is asked, and about which model -*- C++ -*-===//
//
// A request: an objective, a topology, a batch size, feature flags, a per-rank memory
// budget, pipeline settings and the machine (Hardware). PlannerInput: what the planner
// knows about the model the request is for.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_PLANNER_PLANREQUEST_H
#define SNN_PLANNER_PLANREQUEST_H

#include "snn/Planner/Calibration.h"
#include "snn/Planner/Mode.h"
#include "snn/Planner/ModelInfo.h"
#include "snn/Planner/Pipeline.h"
#include "snn/Planner/Topology.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace snn::planner {

struct Features {
  bool experimentalConvTP = false;
  bool allowPipeline = true; ///< the reference package's default
  bool allowZero = false;
};

struct PlanRequest {
  Objective objective = Objective::Speed;
  Topology topology;
  int64_t batchSize = 0; ///< global batch; 0: unknown (allowed only for world size 1)
  std::optional<ModeRequest> forced;
  Features features;
  int64_t memoryBudget = 0; ///< bytes per rank; 0: no budget
  int64_t expectedWorldSize = 0; ///< the device mesh's size, checked when > 0
  bool useCostModel = true;
  std::string ppLayout;                 ///< explicit "a|b|c"; empty: cost-balanced
  std::optional<Schedule> ppSchedule;   ///< empty: interleaved_1f1b if vs > 1 else 1f1b
  int64_t ppMicrobatches = 0;           ///< 0: recommendedPipelineMicrobatches
  int64_t ppVirtualStages = 0;          ///< 0: topology vpp, the layout's length, or the rule
  bool ppDelayWgrad = false;            ///< zero_bubble delays weight gradients anyway
  std::vector<int64_t> ppMemoptStages;  ///< empty: recommendPipelineMemoptStages
  double memoptRatio = 0.5;
  Hardware hardware;
};

/// What the planner knows about the model. `model` is absent when the IR cannot be counted
/// (then `missingReason` says why and the reference table decides); `structure` may still
/// give the ops and their dataflow (shapes unknown), for stage units and TP pairs.
struct PlannerInput {
  std::optional<ModelInfo> model;
  std::optional<ModelInfo> structure;
  std::string missingReason;
  int64_t tpCandidates = 0;      ///< from the analysis
  bool hasTrainableParams = true;
  int64_t pipelineUnits = 0;     ///< used when `model` is absent
};

} // namespace snn::planner

#endif // SNN_PLANNER_PLANREQUEST_H
