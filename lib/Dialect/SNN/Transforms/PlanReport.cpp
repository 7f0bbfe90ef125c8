//===- PlanReport.cpp - The plan as attributes, text and JSON -------------===//
//
// The attributes are the plan's single source: --explain, --explain-json and the exporter's
// manifest all render the same `snn.analysis` / `snn.plan` dictionaries.
//
//===----------------------------------------------------------------------===//
#include "snn/Dialect/SNN/Transforms/PlanReport.h"

#include "mlir/IR/Builders.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/ToolOutputFile.h"

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

ArrayAttr intArray(Builder &b, const std::vector<int64_t> &numbers) {
  SmallVector<Attribute> values;
  for (int64_t n : numbers)
    values.push_back(b.getI64IntegerAttr(n));
  return b.getArrayAttr(values);
}

DictionaryAttr candidateAttribute(Builder &b, const pl::Estimate &e) {
  SmallVector<NamedAttribute> fields = {
      b.getNamedAttr("mode", b.getStringAttr(e.label())),
      b.getNamedAttr("mesh", b.getStringAttr(e.mesh())),
      b.getNamedAttr("feasible", b.getBoolAttr(e.feasible)),
  };
  if (!e.feasible) {
    fields.push_back(b.getNamedAttr("reason", b.getStringAttr(e.infeasibleReason)));
    return b.getDictionaryAttr(fields);
  }
  fields.append({
      b.getNamedAttr("step_seconds", b.getF64FloatAttr(e.stepSeconds)),
      b.getNamedAttr("compute_seconds", b.getF64FloatAttr(e.computeSeconds)),
      b.getNamedAttr("comm_seconds", b.getF64FloatAttr(e.commSeconds)),
      b.getNamedAttr("comm_bytes", b.getI64IntegerAttr(e.commBytes)),
      b.getNamedAttr("memory_bytes", b.getI64IntegerAttr(e.memoryBytes)),
      b.getNamedAttr("state_bytes", b.getI64IntegerAttr(e.stateBytes)),
      b.getNamedAttr("activation_bytes", b.getI64IntegerAttr(e.activationBytes)),
      b.getNamedAttr("memopt_level", b.getI64IntegerAttr(e.memoptLevel)),
      b.getNamedAttr("fits_budget", b.getBoolAttr(e.fitsBudget)),
  });
  return b.getDictionaryAttr(fields);
}

DictionaryAttr modelAttribute(Builder &b, const pl::ModelInfo &model, int64_t batch,
                              size_t units) {
  pl::ModelCost cost = pl::modelCost(model, std::max<int64_t>(batch, 1));
  return b.getDictionaryAttr({
      b.getNamedAttr("time_steps", b.getI64IntegerAttr(model.timeSteps)),
      b.getNamedAttr("param_bytes", b.getI64IntegerAttr(cost.paramBytes)),
      b.getNamedAttr("buffer_bytes", b.getI64IntegerAttr(cost.bufferBytes)),
      b.getNamedAttr("forward_flops", b.getF64FloatAttr(cost.forwardFlops)),
      b.getNamedAttr("activation_bytes", b.getI64IntegerAttr(cost.activationBytes)),
      b.getNamedAttr("pipeline_units", b.getI64IntegerAttr(int64_t(units))),
  });
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

} // namespace

DictionaryAttr planToAttribute(MLIRContext *context, const pl::Plan &plan,
                               const pl::PlanRequest &request, const ModelAnalysis &analysis,
                               const BridgedModel &bridged) {
  Builder b(context);
  SmallVector<Attribute> candidates;
  for (const pl::Estimate &e : plan.candidates)
    candidates.push_back(candidateAttribute(b, e));
  SmallVector<NamedAttribute> fields = {
      b.getNamedAttr("mode", b.getStringAttr(pl::modeName(plan.mode))),
      b.getNamedAttr("objective", b.getStringAttr(pl::objectiveName(plan.objective))),
      b.getNamedAttr("topology", b.getStringAttr(request.topology.dims.empty()
                                                     ? ""
                                                     : request.topology.str())),
      b.getNamedAttr("world_size", b.getI64IntegerAttr(request.topology.worldSize())),
      b.getNamedAttr("batch_size", b.getI64IntegerAttr(request.batchSize)),
      b.getNamedAttr("mesh_shape", intArray(b, plan.meshShape)),
      b.getNamedAttr("mesh_axes", stringArray(b, plan.meshAxes)),
      b.getNamedAttr("dp_mesh_dim", b.getI64IntegerAttr(plan.dpMeshDim)),
      b.getNamedAttr("tp_mesh_dim", b.getI64IntegerAttr(plan.tpMeshDim)),
      b.getNamedAttr("pp_mesh_dim", b.getI64IntegerAttr(plan.ppMeshDim)),
      b.getNamedAttr("optimizer_strategy", b.getStringAttr(pl::optimizerName(plan.optimizer))),
      b.getNamedAttr("memopt_level", b.getI64IntegerAttr(plan.memoptLevel)),
      b.getNamedAttr("pp_microbatches", b.getI64IntegerAttr(plan.ppMicrobatches)),
      b.getNamedAttr("pp_schedule", b.getStringAttr(plan.ppSchedule
                                                        ? pl::scheduleName(*plan.ppSchedule)
                                                        : "none")),
      b.getNamedAttr("pp_virtual_stages", b.getI64IntegerAttr(plan.ppVirtualStages)),
      b.getNamedAttr("pp_layout", b.getStringAttr(pl::formatStageLayout(plan.ppLayout))),
      b.getNamedAttr("pp_memopt_stages", intArray(b, plan.ppMemoptStages)),
      b.getNamedAttr("pp_delay_wgrad", b.getBoolAttr(false)),
      b.getNamedAttr("pp_stage_units", stageUnits(b, plan)),
      b.getNamedAttr("tensor_parallel_roots", stringArray(b, analysis.roots)),
      b.getNamedAttr("tensor_parallel_pairs", stringArray(b, tensorParallelPairs(plan, bridged))),
      b.getNamedAttr("features",
                     b.getDictionaryAttr({
                         b.getNamedAttr("experimental_conv_tp",
                                        b.getBoolAttr(request.features.experimentalConvTP)),
                         b.getNamedAttr("allow_pipeline",
                                        b.getBoolAttr(request.features.allowPipeline)),
                         b.getNamedAttr("allow_zero", b.getBoolAttr(request.features.allowZero)),
                     })),
      b.getNamedAttr("memory_budget", b.getI64IntegerAttr(request.memoryBudget)),
      b.getNamedAttr("decided_by", b.getStringAttr(plan.decidedBy)),
      b.getNamedAttr("rationale", stringArray(b, plan.rationale)),
      b.getNamedAttr("notes", stringArray(b, plan.notes)),
      b.getNamedAttr("candidates", b.getArrayAttr(candidates)),
  };
  if (bridged.input.model)
    fields.push_back(b.getNamedAttr(
        "model", modelAttribute(b, *bridged.input.model, request.batchSize,
                                size_t(bridged.input.pipelineUnits))));
  return b.getDictionaryAttr(fields);
}

// --- JSON -------------------------------------------------------------------------------

llvm::json::Value explanationJSON(ModuleOp module) {
  llvm::json::Object object;
  if (auto analysis = module->getAttrOfType<DictionaryAttr>(kAnalysisAttrName))
    object["analysis"] = attributeToJSON(analysis);
  if (auto plan = module->getAttrOfType<DictionaryAttr>(kPlanAttrName))
    object["plan"] = attributeToJSON(plan);
  return object;
}

// --- Text -------------------------------------------------------------------------------

namespace {

std::vector<std::string> stringsOf(DictionaryAttr dict, StringRef name) {
  std::vector<std::string> texts;
  if (auto array = dict.getAs<ArrayAttr>(name))
    for (Attribute value : array)
      if (auto text = dyn_cast<StringAttr>(value))
        texts.push_back(text.str());
  return texts;
}

std::string stringOf(DictionaryAttr dict, StringRef name) {
  auto text = dict.getAs<StringAttr>(name);
  return text ? text.str() : "";
}

int64_t intOf(DictionaryAttr dict, StringRef name) {
  auto value = dict.getAs<IntegerAttr>(name);
  return value ? value.getInt() : 0;
}

double floatOf(DictionaryAttr dict, StringRef name) {
  auto value = dict.getAs<FloatAttr>(name);
  return value ? value.getValueAsDouble() : 0.0;
}

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

std::string meshText(DictionaryAttr plan) {
  std::vector<std::string> axes = stringsOf(plan, "mesh_axes");
  auto shape = plan.getAs<ArrayAttr>("mesh_shape");
  if (axes.empty() || !shape)
    return "single process";
  std::string text;
  for (size_t i = 0; i < axes.size() && i < shape.size(); ++i)
    text += (i ? " x " : "") + axes[i] + "=" +
            std::to_string(cast<IntegerAttr>(shape[i]).getInt());
  return text;
}

void printModel(DictionaryAttr plan, llvm::raw_ostream &os) {
  auto model = plan.getAs<DictionaryAttr>("model");
  if (!model)
    return;
  os << llvm::formatv("  model: T={0}, parameters {1}, buffers {2}; at batch {3}: forward {4}, "
                      "activations kept for backward {5}; {6} pipeline units\n",
                      intOf(model, "time_steps"), pl::formatBytes(intOf(model, "param_bytes")),
                      pl::formatBytes(intOf(model, "buffer_bytes")), intOf(plan, "batch_size"),
                      pl::formatFlops(floatOf(model, "forward_flops")),
                      pl::formatBytes(intOf(model, "activation_bytes")),
                      intOf(model, "pipeline_units"));
}

void printPipeline(DictionaryAttr plan, llvm::raw_ostream &os) {
  if (stringOf(plan, "mode") != "pp")
    return;
  os << llvm::formatv("  pipeline: {0} microbatches, schedule {1}, {2} virtual stage(s) per "
                      "rank, layout {3}\n",
                      intOf(plan, "pp_microbatches"), stringOf(plan, "pp_schedule"),
                      intOf(plan, "pp_virtual_stages"), stringOf(plan, "pp_layout"));
  auto stages = plan.getAs<ArrayAttr>("pp_stage_units");
  int64_t ranks = std::max<int64_t>(1, intOf(plan, "world_size"));
  for (size_t s = 0; stages && s < stages.size(); ++s) {
    os << "    stage " << s << " (rank " << int64_t(s) % ranks << "):";
    for (Attribute unit : cast<ArrayAttr>(stages[s]))
      os << " " << cast<StringAttr>(unit).getValue();
    os << "\n";
  }
  if (auto memopt = plan.getAs<ArrayAttr>("pp_memopt_stages"); memopt && !memopt.empty()) {
    os << "    recomputing stages:";
    for (Attribute stage : memopt)
      os << " " << cast<IntegerAttr>(stage).getInt();
    os << "\n";
  }
}

void printCandidates(DictionaryAttr plan, llvm::raw_ostream &os) {
  auto candidates = plan.getAs<ArrayAttr>("candidates");
  if (!candidates || candidates.empty())
    return;
  os << "Candidates (estimated per rank and training step)\n";
  os << llvm::formatv("  {0,-9} {1,-14} {2,10} {3,10} {4,10} {5,10} {6,10} {7,10} {8,11}\n",
                      "mode", "mesh", "step", "compute", "comm", "sent", "memory", "state",
                      "activations");
  for (Attribute attr : candidates) {
    auto c = cast<DictionaryAttr>(attr);
    if (!c.getAs<BoolAttr>("feasible").getValue()) {
      os << llvm::formatv("  {0,-9} {1,-14} not feasible: {2}\n", stringOf(c, "mode"),
                          stringOf(c, "mesh"), stringOf(c, "reason"));
      continue;
    }
    os << llvm::formatv("  {0,-9} {1,-14} {2,10} {3,10} {4,10} {5,10} {6,10} {7,10} {8,11}{9}\n",
                        stringOf(c, "mode"), stringOf(c, "mesh"),
                        pl::formatSeconds(floatOf(c, "step_seconds")),
                        pl::formatSeconds(floatOf(c, "compute_seconds")),
                        pl::formatSeconds(floatOf(c, "comm_seconds")),
                        pl::formatBytes(intOf(c, "comm_bytes")),
                        pl::formatBytes(intOf(c, "memory_bytes")),
                        pl::formatBytes(intOf(c, "state_bytes")),
                        pl::formatBytes(intOf(c, "activation_bytes")),
                        c.getAs<BoolAttr>("fits_budget").getValue() ? "" : "  over budget");
  }
}

void printPlan(DictionaryAttr plan, llvm::raw_ostream &os) {
  std::string mode = stringOf(plan, "mode");
  if (stringOf(plan, "optimizer_strategy") == "zero")
    mode += "+zero";
  std::string topology = stringOf(plan, "topology");
  os << "Plan: " << mode << " on " << meshText(plan) << " (objective "
     << stringOf(plan, "objective") << ", decided by " << stringOf(plan, "decided_by") << ")\n";
  os << "  topology " << (topology.empty() ? "single process" : topology) << " (world size "
     << intOf(plan, "world_size") << "), batch size " << intOf(plan, "batch_size");
  if (int64_t budget = intOf(plan, "memory_budget"))
    os << ", memory budget " << pl::formatBytes(budget) << " per rank";
  os << "\n  optimizer " << stringOf(plan, "optimizer_strategy") << ", memopt level "
     << intOf(plan, "memopt_level") << "\n";
  printModel(plan, os);
  printPipeline(plan, os);
  std::vector<std::string> pairs = stringsOf(plan, "tensor_parallel_pairs");
  if (!pairs.empty())
    printList(os, "tensor-parallel pairs", pairs);
  printCandidates(plan, os);
  printBullets(os, "Rationale", stringsOf(plan, "rationale"));
  printBullets(os, "Notes", stringsOf(plan, "notes"));
}

} // namespace

void printAnalysis(DictionaryAttr analysis, llvm::raw_ostream &os) {
  std::vector<std::string> roots = stringsOf(analysis, "roots");
  bool convTP = analysis.getAs<BoolAttr>("experimental_conv_tp") &&
                analysis.getAs<BoolAttr>("experimental_conv_tp").getValue();
  os << "Analysis (roots: " << (roots.empty() ? "whole model" : llvm::join(roots, ", "))
     << "; experimental conv TP: " << (convTP ? "on" : "off") << ")\n";
  printList(os, "stateful neurons", stringsOf(analysis, "memory_module_names"));
  printList(os, "tensor-parallel candidates",
            stringsOf(analysis, "tensor_parallel_candidate_names"));
  printList(os, "cannot be split", stringsOf(analysis, "unsupported_tensor_parallel_names"));
  std::vector<std::string> notes = stringsOf(analysis, "notes");
  for (const std::string &note : notes)
    os << "  note: " << note << "\n";
}

void printExplanation(ModuleOp module, llvm::raw_ostream &os) {
  if (auto analysis = module->getAttrOfType<DictionaryAttr>(kAnalysisAttrName))
    printAnalysis(analysis, os);
  if (auto plan = module->getAttrOfType<DictionaryAttr>(kPlanAttrName))
    printPlan(plan, os);
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
