//===- PlanReport.cpp - The plan as attributes, text and JSON -------------===//
//
// The attributes are the plan's single source: --explain, --explain-json and the exporter's
// manifest all render the same typed `#snn.analysis` / `#snn.plan` attributes; the JSON goes
// through the schema (snn/Schema/Manifest.h) so its keys are the manifest's.
//
//===----------------------------------------------------------------------===//
#include "snn/Dialect/SNN/Transforms/PlanReport.h"

#include "mlir/IR/Builders.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/ToolOutputFile.h"

#include "snn/Dialect/SNN/IR/PlanSchema.h"
#include "snn/Dialect/SNN/Transforms/CommunicationEstimate.h"
#include "snn/Planner/CostModel.h"
#include "snn/Planner/DeviceCalibration.h"
#include "snn/Planner/Pipeline.h"
#include "snn/Planner/Units.h"

using namespace mlir;
namespace pl = snn::planner;

namespace snn {

// --- The plan as an attribute --------------------------------------------------------------

namespace {

ArrayAttr stringArray(Builder &b, const std::vector<std::string> &texts) {
  SmallVector<Attribute> values;
  for (const std::string &text : texts)
    values.push_back(b.getStringAttr(text));
  return b.getArrayAttr(values);
}

llvm::APFloat real(double value) { return llvm::APFloat(value); }

PlanCandidateAttr candidateAttribute(MLIRContext *context, const pl::Estimate &e) {
  bool ok = e.feasible;
  return PlanCandidateAttr::get(
      context, e.label(), e.mesh(), ok, ok ? "" : e.infeasibleReason,
      real(ok ? e.stepSeconds : 0), real(ok ? e.computeSeconds : 0),
      real(ok ? e.commSeconds : 0), ok ? e.commBytes : 0, ok ? e.memoryBytes : 0,
      ok ? e.stateBytes : 0, ok ? e.activationBytes : 0, ok ? e.memoptLevel : 0,
      ok ? e.fitsBudget : true);
}

ModelSummaryAttr modelAttribute(MLIRContext *context, const pl::ModelInfo &model,
                                int64_t batch, size_t units) {
  pl::ModelCost cost = pl::modelCost(model, std::max<int64_t>(batch, 1));
  return ModelSummaryAttr::get(context, model.timeSteps, cost.paramBytes, cost.bufferBytes,
                               real(cost.forwardFlops), cost.activationBytes, int64_t(units));
}

std::vector<std::string> tensorParallelPairs(const pl::Plan &plan, const BridgedModel &bridged) {
  std::vector<std::string> pairs;
  if (plan.tpMeshDim < 0)
    return pairs;
  for (const pl::TPPair &pair : plan.tensorParallel.pairs) {
    std::string col = displayName(bridged.ops[pair.colwise]);
    pairs.push_back(pair.rowwise >= 0
                        ? col + " -> " + displayName(bridged.ops[pair.rowwise])
                        : col + " (gathered after " +
                              displayName(bridged.ops[pair.gatherAfter]) + ")");
  }
  return pairs;
}

ArrayAttr stageUnits(Builder &b, const pl::Plan &plan) {
  SmallVector<Attribute> stages;
  size_t unit = 0;
  for (int64_t count : plan.ppLayout) {
    std::vector<std::string> names;
    for (int64_t i = 0; i < count && unit < plan.units.size(); ++i)
      names.push_back(plan.units[unit++].name);
    stages.push_back(stringArray(b, names));
  }
  return b.getArrayAttr(stages);
}

/// A pipeline's cost per logical stage; none for the other modes.
ArrayAttr stageCosts(Builder &b, const pl::Plan &plan) {
  if (plan.ppStageCosts.empty())
    return {};
  SmallVector<Attribute> costs;
  for (double cost : plan.ppStageCosts)
    costs.push_back(b.getF64FloatAttr(cost));
  return b.getArrayAttr(costs);
}

} // namespace

PlanAttr planToAttribute(MLIRContext *context, const pl::Plan &plan,
                         const pl::PlanRequest &request, const ModelAnalysis &analysis,
                         const BridgedModel &bridged) {
  Builder b(context);
  SmallVector<Attribute> candidates;
  for (const pl::Estimate &e : plan.candidates)
    candidates.push_back(candidateAttribute(context, e));
  ModelSummaryAttr model;
  if (bridged.input.model)
    model = modelAttribute(context, *bridged.input.model, request.batchSize,
                           size_t(bridged.input.pipelineUnits));
  const pl::Features &features = request.features;
  return PlanAttr::get(
      context, plan.mode, plan.objective, plan.optimizer,
      request.topology.dims.empty() ? "" : request.topology.str(),
      request.topology.worldSize(), request.batchSize, stringArray(b, plan.meshAxes),
      plan.meshShape, plan.dpMeshDim, plan.tpMeshDim, plan.ppMeshDim, plan.memoptLevel,
      plan.ppMicrobatches, plan.ppSchedule, plan.ppVirtualStages, plan.ppLayout,
      plan.ppMemoptStages, plan.ppDelayWgrad, stageUnits(b, plan),
      stringArray(b, analysis.roots), stringArray(b, tensorParallelPairs(plan, bridged)),
      features.experimentalConvTP, features.allowPipeline, features.allowZero,
      request.memoryBudget, plan.decidedBy, stringArray(b, plan.rationale),
      stringArray(b, plan.notes), b.getArrayAttr(candidates), model, /*partitioned=*/false,
      plan.chosen ? candidateAttribute(context, *plan.chosen) : PlanCandidateAttr(),
      plan.chosen && bridged.input.model
          ? b.getStringAttr(pl::timesSource(request.hardware, *bridged.input.model))
          : StringAttr(),
      int64_t(request.hardware.optimizerStatesPerParam), stageCosts(b, plan));
}

// --- JSON -------------------------------------------------------------------------------

llvm::json::Value explanationJSON(ModuleOp module) {
  llvm::json::Object object;
  if (auto analysis = module->getAttrOfType<AnalysisAttr>(kAnalysisAttrName))
    object["analysis"] = analysisToJSON(analysis);
  if (auto plan = module->getAttrOfType<PlanAttr>(kPlanAttrName)) {
    schema::PlanExplanation explanation = toPlanExplanation(plan);
    llvm::Expected<llvm::json::Value> json = llvm::json::parse(schema::formatPlanJson(
        planSpecWithCommunication(module, plan), toMeshSpec(plan), &explanation));
    object["plan"] = json ? std::move(*json) : llvm::json::Value(nullptr);
    llvm::consumeError(json.takeError());
  }
  return object;
}

// --- Text -------------------------------------------------------------------------------

namespace {

void printList(llvm::raw_ostream &os, StringRef title, const std::vector<std::string> &items) {
  os << "  " << title << " (" << items.size() << "): ";
  if (items.empty())
    os << "-";
  for (size_t i = 0; i < items.size(); ++i)
    os << (i ? ", " : "") << items[i];
  os << "\n";
}

void printBullets(llvm::raw_ostream &os, StringRef title, const std::vector<std::string> &items) {
  if (items.empty())
    return;
  os << title << "\n";
  for (const std::string &item : items)
    os << "  - " << item << "\n";
}

std::string meshText(PlanAttr plan) {
  std::vector<std::string> axes = stringList(plan.getMeshAxes());
  ArrayRef<int64_t> shape = plan.getMeshShape();
  if (axes.empty())
    return "single process";
  std::string text;
  for (size_t i = 0; i < axes.size() && i < shape.size(); ++i)
    text += (i ? " x " : "") + axes[i] + "=" + std::to_string(shape[i]);
  return text;
}

void printModel(PlanAttr plan, llvm::raw_ostream &os) {
  ModelSummaryAttr model = plan.getModel();
  if (!model)
    return;
  os << llvm::formatv("  model: T={0}, parameters {1}, buffers {2}; at batch {3}: forward {4}, "
                      "activations kept for backward {5}; {6} pipeline units\n",
                      model.getTimeSteps(), pl::formatBytes(model.getParamBytes()),
                      pl::formatBytes(model.getBufferBytes()), plan.getBatchSize(),
                      pl::formatFlops(model.getForwardFlops().convertToDouble()),
                      pl::formatBytes(model.getActivationBytes()), model.getPipelineUnits());
}

/// The ranks that run logical stage `stage`: those whose row-major pp coordinate is
/// `stage` mod the pp size (with dp, one per data-parallel replica).
std::string stageRanks(PlanAttr plan, int64_t stage) {
  ArrayRef<int64_t> shape = plan.getMeshShape();
  int64_t dim = plan.getPpMeshDim();
  if (dim < 0 || dim >= int64_t(shape.size()))
    return "rank ?";
  int64_t world = 1, stride = 1;
  for (int64_t d = 0; d < int64_t(shape.size()); ++d) {
    world *= shape[d];
    stride *= d > dim ? shape[d] : 1;
  }
  SmallVector<std::string> ranks;
  for (int64_t rank = 0; rank < world; ++rank)
    if ((rank / stride) % shape[dim] == stage % shape[dim])
      ranks.push_back(std::to_string(rank));
  return (ranks.size() == 1 ? "rank " : "ranks ") + llvm::join(ranks, ", ");
}

void printPipeline(PlanAttr plan, llvm::raw_ostream &os) {
  if (plan.getMode() != schema::ParallelMode::PP)
    return;
  std::optional<schema::PipelineSchedule> schedule = plan.getPpSchedule();
  std::vector<int64_t> layout(plan.getPpLayout().begin(), plan.getPpLayout().end());
  os << llvm::formatv("  pipeline: {0} microbatches, schedule {1}{2}, {3} virtual stage(s) per "
                      "rank, layout {4}\n",
                      plan.getPpMicrobatches(), schedule ? schema::nameOf(*schedule) : "none",
                      plan.getPpDelayWgrad() ? " (weight gradients delayed)" : "",
                      plan.getPpVirtualStages(), pl::formatStageLayout(layout));
  ArrayAttr stages = plan.getPpStageUnits();
  for (size_t s = 0; s < stages.size(); ++s) {
    os << "    stage " << s << " (" << stageRanks(plan, int64_t(s)) << "):";
    for (const std::string &unit : stringList(dyn_cast<ArrayAttr>(stages[s])))
      os << " " << unit;
    os << "\n";
  }
  if (!plan.getPpMemoptStages().empty()) {
    os << "    recomputing stages:";
    for (int64_t stage : plan.getPpMemoptStages())
      os << " " << stage;
    os << "\n";
  }
}

void printCandidate(PlanCandidateAttr c, llvm::raw_ostream &os) {
  if (!c.getFeasible()) {
    os << llvm::formatv("  {0,-9} {1,-20} not feasible: {2}\n", c.getLabel(), c.getMesh(),
                        c.getReason());
    return;
  }
  os << llvm::formatv("  {0,-9} {1,-20} {2,10} {3,10} {4,10} {5,10} {6,10} {7,10} {8,11}{9}\n",
                      c.getLabel(), c.getMesh(),
                      pl::formatSeconds(c.getStepSeconds().convertToDouble()),
                      pl::formatSeconds(c.getComputeSeconds().convertToDouble()),
                      pl::formatSeconds(c.getCommSeconds().convertToDouble()),
                      pl::formatBytes(c.getCommBytes()), pl::formatBytes(c.getMemoryBytes()),
                      pl::formatBytes(c.getStateBytes()),
                      pl::formatBytes(c.getActivationBytes()),
                      c.getFitsBudget() ? "" : "  over budget");
}

void printCandidates(PlanAttr plan, llvm::raw_ostream &os) {
  if (plan.getCandidates().empty())
    return;
  os << "Candidates (estimated per rank and training step)\n";
  os << llvm::formatv("  {0,-9} {1,-20} {2,10} {3,10} {4,10} {5,10} {6,10} {7,10} {8,11}\n",
                      "mode", "mesh", "step", "compute", "comm", "sent", "memory", "state",
                      "activations");
  for (Attribute attr : plan.getCandidates())
    if (auto candidate = dyn_cast<PlanCandidateAttr>(attr))
      printCandidate(candidate, os);
}

/// The partitioned program's collectives (CommunicationEstimate.h); nothing when there are
/// none.
void printCommunication(ModuleOp module, PlanAttr plan, llvm::raw_ostream &os) {
  std::vector<schema::CommunicationVolume> volumes = estimateCommunication(module);
  if (volumes.empty())
    return;
  os << "Communication (per rank and training step, counted on the partitioned program at "
     << perRankBatch(plan) << " samples per rank)\n";
  for (const schema::CommunicationVolume &v : volumes)
    os << llvm::formatv("  {0,-22} {1,4} call{2} {3,10}\n", v.kind + " over " + v.meshAxis,
                        v.calls, v.calls == 1 ? " " : "s", pl::formatBytes(v.bytes));
}

void printPlan(ModuleOp module, PlanAttr plan, llvm::raw_ostream &os) {
  std::string mode = schema::nameOf(plan.getMode());
  const char *optimizer = schema::nameOf(plan.getOptimizerStrategy());
  if (plan.getOptimizerStrategy() == schema::OptimizerStrategy::Zero)
    mode += "+zero";
  StringRef topology = plan.getTopology();
  os << "Plan: " << mode << " on " << meshText(plan) << " (objective "
     << schema::nameOf(plan.getObjective()) << ", decided by " << plan.getDecidedBy() << ")\n";
  os << "  topology " << (topology.empty() ? "single process" : topology) << " (world size "
     << plan.getWorldSize() << "), batch size " << plan.getBatchSize();
  if (int64_t budget = plan.getMemoryBudget())
    os << ", memory budget " << pl::formatBytes(budget) << " per rank";
  os << "\n  optimizer " << optimizer << ", memopt level " << plan.getMemoptLevel() << "\n";
  printModel(plan, os);
  printPipeline(plan, os);
  std::vector<std::string> pairs = stringList(plan.getTensorParallelPairs());
  if (!pairs.empty())
    printList(os, "tensor-parallel pairs", pairs);
  printCandidates(plan, os);
  printCommunication(module, plan, os);
  printBullets(os, "Rationale", stringList(plan.getRationale()));
  printBullets(os, "Notes", stringList(plan.getNotes()));
}

} // namespace

void printAnalysis(AnalysisAttr analysis, llvm::raw_ostream &os) {
  std::vector<std::string> roots = stringList(analysis.getRoots());
  os << "Analysis (roots: " << (roots.empty() ? "whole model" : llvm::join(roots, ", "))
     << "; experimental conv TP: " << (analysis.getExperimentalConvTp() ? "on" : "off")
     << ")\n";
  printList(os, "stateful neurons", stringList(analysis.getMemoryModuleNames()));
  printList(os, "tensor-parallel candidates",
            stringList(analysis.getTensorParallelCandidateNames()));
  printList(os, "cannot be split", stringList(analysis.getUnsupportedTensorParallelNames()));
  for (const std::string &note : stringList(analysis.getNotes()))
    os << "  note: " << note << "\n";
}

void printExplanation(ModuleOp module, llvm::raw_ostream &os) {
  if (auto analysis = module->getAttrOfType<AnalysisAttr>(kAnalysisAttrName))
    printAnalysis(analysis, os);
  if (auto plan = module->getAttrOfType<PlanAttr>(kPlanAttrName))
    printPlan(module, plan, os);
}

LogicalResult writeReport(StringRef path, Location loc,
                          const std::function<void(llvm::raw_ostream &)> &write) {
  std::string error;
  auto output = openOutputFile(path, &error);
  if (!output)
    return emitError(loc) << "cannot write '" << path << "': " << error;
  write(output->os());
  output->keep();
  return success();
}

} // namespace snn
