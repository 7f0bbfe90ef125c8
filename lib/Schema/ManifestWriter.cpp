//===- ManifestWriter.cpp - manifest.json written ---------------------------===//
//
// formatManifest and formatPlanJson: the manifest's fields as JSON under ManifestKeys.h's
// names, which the reader (Manifest.cpp) parses back.
//
//===----------------------------------------------------------------------===//
#include "snn/Schema/Manifest.h"
#include "ManifestKeys.h"

#include <nlohmann/json.hpp>

namespace snn::schema {

using nlohmann::json;

namespace {

json tensorJson(const TensorSpec &spec) {
  json object = {
      {key::kName, spec.name}, {key::kShape, spec.shape}, {key::kTimeMajor, spec.timeMajor}};
  if (spec.repeatedOverTime)
    object[key::kRepeatedOverTime] = true;
  return object;
}

json communicationJson(const std::vector<CommunicationVolume> &volumes) {
  json list = json::array();
  for (const CommunicationVolume &v : volumes)
    list.push_back({{key::kKind, v.kind},
                    {key::kMeshAxis, v.meshAxis},
                    {plankey::kCalls, v.calls},
                    {plankey::kBytes, v.bytes}});
  return list;
}

json planJson(const PlanSpec &plan) {
  using namespace plankey;
  json object = {{kMode, nameOf(plan.mode)},
          {kObjective, nameOf(plan.objective)},
          {kOptimizer, nameOf(plan.optimizer)},
          {kPartitioned, plan.partitioned},
          {kBatchSize, plan.batchSize},
          {kMemoptLevel, plan.memoptLevel},
          {kDpMeshDim, plan.dpMeshDim},
          {kTpMeshDim, plan.tpMeshDim},
          {kPpMeshDim, plan.ppMeshDim},
          {kMicrobatches, plan.ppMicrobatches},
          {kSchedule, plan.ppSchedule ? json(nameOf(*plan.ppSchedule)) : json("none")},
          {kVirtualStages, plan.ppVirtualStages},
          {kLayout, plan.ppLayout},
          {kMemoptStages, plan.ppMemoptStages},
          {kDelayWgrad, plan.ppDelayWgrad},
          {kStageUnits, plan.ppStageUnits},
          {kStageCosts, plan.ppStageCosts},
          {kTensorParallelPairs, plan.tensorParallelPairs},
          {kCommunication, communicationJson(plan.communication)},
          {kDecidedBy, plan.decidedBy},
          {kRationale, plan.rationale}};
  if (plan.prediction) {
    const PlanPrediction &p = *plan.prediction;
    object[kPrediction] = {{kStepSeconds, p.stepSeconds}, {kComputeSeconds, p.computeSeconds},
                           {kCommSeconds, p.commSeconds}, {kMemoryBytes, p.memoryBytes},
                           {kTimes, p.times}, {kOptimizerStates, p.optimizerStates}};
  }
  return object;
}

json candidateJson(const PlanCandidate &c) {
  using namespace explainkey;
  json object = {{kLabel, c.label}, {kMesh, c.mesh}, {kFeasible, c.feasible}};
  if (!c.feasible) {
    object[kReason] = c.reason;
    return object;
  }
  object.update({{kStep, c.stepSeconds},         {kCompute, c.computeSeconds},
                 {kComm, c.commSeconds},         {kCommBytes, c.commBytes},
                 {kMemoryBytes, c.memoryBytes},  {kStateBytes, c.stateBytes},
                 {kActivationBytes, c.activationBytes}, {kMemopt, c.memoptLevel},
                 {kFits, c.fitsBudget}});
  return object;
}

json explanationJson(const PlanExplanation &e) {
  using namespace explainkey;
  json candidates = json::array();
  for (const PlanCandidate &c : e.candidates)
    candidates.push_back(candidateJson(c));
  json object = {{kTopology, e.topology},
                 {kWorldSize, e.worldSize},
                 {kFeatures, {{kConvTP, e.experimentalConvTP},
                              {kAllowPipeline, e.allowPipeline},
                              {kAllowZero, e.allowZero}}},
                 {kMemoryBudget, e.memoryBudget},
                 {kRoots, e.tensorParallelRoots},
                 {kNotes, e.notes},
                 {kCandidates, std::move(candidates)}};
  if (e.model)
    object[kModel] = {{kTimeSteps, e.model->timeSteps},
                      {kParamBytes, e.model->paramBytes},
                      {kBufferBytes, e.model->bufferBytes},
                      {kForwardFlops, e.model->forwardFlops},
                      {kActivationBytes, e.model->activationBytes},
                      {kPipelineUnits, e.model->pipelineUnits}};
  return object;
}

json parametersJson(const std::vector<ParameterSpec> &parameters) {
  json list = json::array();
  for (const ParameterSpec &p : parameters) {
    json entry = {{key::kName, p.name},
                  {key::kShape, p.shape},
                  {key::kKind, parameterKindName(p.kind)},
                  {key::kSharding, p.sharding}};
    if (p.isSplit()) {
      entry[key::kSplitDim] = p.splitDim;
      entry[key::kMeshAxis] = p.meshAxis;
      if (p.splitGroups != 1)
        entry[key::kSplitGroups] = p.splitGroups;
    }
    if (p.stage >= 0)
      entry[key::kStage] = p.stage;
    if (p.frozen)
      entry[key::kFrozen] = true;
    list.push_back(std::move(entry));
  }
  return list;
}

} // namespace

std::string formatManifest(const Manifest &manifest) {
  json programs = json::array();
  for (const ProgramSpec &program : manifest.programs) {
    json entry = {{key::kFile, program.file}, {key::kRanks, program.ranks}};
    if (program.stage >= 0)
      entry[key::kStage] = program.stage;
    programs.push_back(std::move(entry));
  }
  json document = {{key::kFormat, manifest.format},
                   {key::kVersion, manifest.version},
                   {key::kProducer, manifest.producer},
                   {key::kSource, manifest.source},
                   {key::kWorldSize, manifest.worldSize},
                   {key::kMesh, {{key::kAxes, manifest.mesh.axes},
                                 {key::kShape, manifest.mesh.shape}}},
                   {key::kPrograms, std::move(programs)},
                   {key::kInput, tensorJson(manifest.input)},
                   {key::kOutput, tensorJson(manifest.output)},
                   {key::kParameters, parametersJson(manifest.parameters)},
                   {key::kPlan, planJson(manifest.plan)}};
  if (manifest.explanation)
    document[key::kExplanation] = explanationJson(*manifest.explanation);
  return document.dump(2) + "\n";
}

std::string formatPlanJson(const PlanSpec &plan, const MeshSpec &mesh,
                           const PlanExplanation *explanation) {
  json object = planJson(plan);
  object[explainkey::kMeshAxes] = mesh.axes;
  object[explainkey::kMeshShape] = mesh.shape;
  if (explanation)
    object.update(explanationJson(*explanation));
  return object.dump(2);
}

} // namespace snn::schema
