//===- PlanSchema.cpp - #snn.plan -> schema structs -----------------------===//
#include "snn/Dialect/SNN/IR/PlanSchema.h"

using namespace mlir;

namespace snn {

std::vector<std::string> stringList(ArrayAttr array) {
  std::vector<std::string> texts;
  if (!array)
    return texts;
  for (Attribute value : array)
    if (auto text = dyn_cast<StringAttr>(value))
      texts.push_back(text.str());
  return texts;
}

schema::PlanSpec toPlanSpec(PlanAttr plan) {
  schema::PlanSpec spec;
  spec.mode = plan.getMode();
  spec.objective = plan.getObjective();
  spec.optimizer = plan.getOptimizerStrategy();
  spec.partitioned = plan.getPartitioned();
  spec.batchSize = plan.getBatchSize();
  spec.memoptLevel = plan.getMemoptLevel();
  spec.dpMeshDim = plan.getDpMeshDim();
  spec.tpMeshDim = plan.getTpMeshDim();
  spec.ppMeshDim = plan.getPpMeshDim();
  spec.ppMicrobatches = plan.getPpMicrobatches();
  spec.ppSchedule = plan.getPpSchedule();
  spec.ppVirtualStages = plan.getPpVirtualStages();
  spec.ppLayout.assign(plan.getPpLayout().begin(), plan.getPpLayout().end());
  spec.ppMemoptStages.assign(plan.getPpMemoptStages().begin(), plan.getPpMemoptStages().end());
  spec.ppDelayWgrad = plan.getPpDelayWgrad();
  if (ArrayAttr costs = plan.getPpStageCosts())
    for (Attribute cost : costs)
      if (auto value = dyn_cast<FloatAttr>(cost))
        spec.ppStageCosts.push_back(value.getValueAsDouble());
  for (Attribute stage : plan.getPpStageUnits())
    spec.ppStageUnits.push_back(stringList(dyn_cast<ArrayAttr>(stage)));
  spec.tensorParallelPairs = stringList(plan.getTensorParallelPairs());
  spec.decidedBy = plan.getDecidedBy().str();
  spec.rationale = stringList(plan.getRationale());
  if (PlanCandidateAttr predicted = plan.getPredicted())
    spec.prediction = schema::PlanPrediction{
        predicted.getStepSeconds().convertToDouble(),
        predicted.getComputeSeconds().convertToDouble(),
        predicted.getCommSeconds().convertToDouble(), predicted.getMemoryBytes(),
        plan.getTimes() ? plan.getTimes().getValue().str() : std::string(),
        plan.getOptimizerStates()};
  return spec;
}

schema::MeshSpec toMeshSpec(PlanAttr plan) {
  schema::MeshSpec mesh;
  mesh.axes = stringList(plan.getMeshAxes());
  mesh.shape.assign(plan.getMeshShape().begin(), plan.getMeshShape().end());
  return mesh;
}

namespace {

schema::PlanCandidate toCandidate(PlanCandidateAttr c) {
  schema::PlanCandidate candidate;
  candidate.label = c.getLabel().str();
  candidate.mesh = c.getMesh().str();
  candidate.feasible = c.getFeasible();
  candidate.reason = c.getReason().str();
  candidate.stepSeconds = c.getStepSeconds().convertToDouble();
  candidate.computeSeconds = c.getComputeSeconds().convertToDouble();
  candidate.commSeconds = c.getCommSeconds().convertToDouble();
  candidate.commBytes = c.getCommBytes();
  candidate.memoryBytes = c.getMemoryBytes();
  candidate.stateBytes = c.getStateBytes();
  candidate.activationBytes = c.getActivationBytes();
  candidate.memoptLevel = c.getMemoptLevel();
  candidate.fitsBudget = c.getFitsBudget();
  return candidate;
}

} // namespace

schema::PlanExplanation toPlanExplanation(PlanAttr plan) {
  schema::PlanExplanation e;
  e.topology = plan.getTopology().str();
  e.worldSize = plan.getWorldSize();
  e.experimentalConvTP = plan.getExperimentalConvTp();
  e.allowPipeline = plan.getAllowPipeline();
  e.allowZero = plan.getAllowZero();
  e.memoryBudget = plan.getMemoryBudget();
  e.tensorParallelRoots = stringList(plan.getTensorParallelRoots());
  e.notes = stringList(plan.getNotes());
  for (Attribute c : plan.getCandidates())
    if (auto candidate = dyn_cast<PlanCandidateAttr>(c))
      e.candidates.push_back(toCandidate(candidate));
  if (ModelSummaryAttr model = plan.getModel())
    e.model = schema::ModelSummary{model.getTimeSteps(),
                                   model.getParamBytes(),
                                   model.getBufferBytes(),
                                   model.getForwardFlops().convertToDouble(),
                                   model.getActivationBytes(),
                                   model.getPipelineUnits()};
  return e;
}

} // namespace snn
