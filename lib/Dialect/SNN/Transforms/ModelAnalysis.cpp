//===- ModelAnalysis.cpp - Neurons, TP candidates and roots ---------------===//
//
// The reference's analyze(): neurons over the whole model (every one carries state across
// T, whatever the roots), TP candidates and unsplittable layers under the roots. A root
// names a module path; "conv_fc" covers "conv_fc" and "conv_fc.*" but not "conv_fc2".
//
//===----------------------------------------------------------------------===//
#include "snn/Dialect/SNN/Transforms/ModelAnalysis.h"

#include "snn/Dialect/SNN/IR/PlanSchema.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <map>

#include "snn/Dialect/SNN/IR/SNNOps.h"

using namespace mlir;

namespace snn {

std::string sourceName(Operation *op) {
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    return name.getName().str();
  return "";
}

std::string displayName(Operation *op) {
  std::string name = sourceName(op);
  return name.empty() ? "<unnamed " + op->getName().getStringRef().str() + ">" : name;
}

std::vector<Operation *> modelOps(ModuleOp module) {
  std::vector<Operation *> ops;
  module.walk([&](Operation *op) {
    if (op->getDialect() && isa<SNNDialect>(op->getDialect()) &&
        !isa<ParameterOp, ONNXNodeOp>(op))
      ops.push_back(op);
  });
  return ops;
}

bool ModelAnalysis::isCandidate(Operation *op) const {
  return llvm::is_contained(tpCandidates, op);
}

namespace {

bool covers(StringRef root, StringRef name) {
  return name == root || (name.starts_with(root) && name.drop_front(root.size()).starts_with("."));
}

bool underRoots(ArrayRef<std::string> roots, Operation *op) {
  if (roots.empty())
    return true;
  std::string name = sourceName(op);
  return llvm::any_of(roots, [&](const std::string &root) { return covers(root, name); });
}

LogicalResult checkRoots(ModuleOp module, ArrayRef<std::string> roots,
                         const std::vector<Operation *> &ops) {
  for (const std::string &root : roots) {
    if (root.empty())
      return module.emitError("empty root: a root names a module path such as 'conv_fc'");
    bool known = llvm::any_of(ops, [&](Operation *op) { return covers(root, sourceName(op)); });
    if (!known)
      return module.emitError("unknown root '")
             << root << "': no op's module path is '" << root << "' or starts with '" << root
             << ".'";
  }
  return success();
}

/// Conv layers split their output channels only with the experimental flag, and only
/// when ungrouped (a grouped conv's channels are tied to its input's).
bool splittable(Operation *op, bool experimentalConvTP) {
  if (isa<LinearOp>(op))
    return true;
  if (auto conv = dyn_cast<Conv2dOp>(op))
    return experimentalConvTP && conv.getGroups() == 1;
  return false;
}

std::string neuronNote(const std::vector<Operation *> &neurons) {
  std::map<std::string, int> kinds;
  for (Operation *op : neurons)
    ++kinds[op->getName().stripDialect().str()];
  std::string counts;
  for (const auto &[kind, count] : kinds)
    counts += (counts.empty() ? "" : ", ") + kind + " x" + std::to_string(count);
  return std::to_string(neurons.size()) + " stateful neuron" + (neurons.size() == 1 ? "" : "s") +
         " (" + counts + ") carry membrane state across the time steps: a split keeps each "
         "neuron's state sharded like its input";
}

/// One note per spiking attention: its heads, and whether tensor parallelism can split it.
void attentionNotes(ModelAnalysis &a, const std::vector<Operation *> &ops) {
  for (Operation *op : ops) {
    auto attention = dyn_cast<SpikingAttentionOp>(op);
    if (!attention)
      continue;
    auto type = cast<RankedTensorType>(attention.getResult().getType());
    int64_t heads = attention.getNumHeads();
    std::string note = "spiking attention '" + displayName(op) + "': " + std::to_string(heads) +
                       " heads of " + std::to_string(type.getDimSize(2) / heads) +
                       " channels over " + std::to_string(type.getDimSize(3)) + " tokens; ";
    note += a.experimentalConvTP && underRoots(a.roots, op)
                ? "tp splits whole heads between its qkv and output projections (a tp size "
                  "must divide " + std::to_string(heads) + ")"
                : "its 1x1 conv projections split by heads only with experimental-conv-tp";
    a.notes.push_back(std::move(note));
  }
}

void addNotes(ModelAnalysis &a, const std::vector<Operation *> &ops) {
  a.notes.push_back(a.roots.empty() ? "no roots: tensor-parallel candidates are searched in the "
                                      "whole model"
                                    : "roots: " + llvm::join(a.roots, ", "));
  if (!a.memoryModules.empty())
    a.notes.push_back(neuronNote(a.memoryModules));
  if (a.tpCandidates.empty())
    a.notes.push_back("no tensor-parallel candidate under the roots: tp and fsdp_tp are "
                      "unavailable");
  size_t convs = llvm::count_if(a.unsupported, [](Operation *op) { return isa<Conv2dOp>(op); });
  if (convs > 0 && !a.experimentalConvTP)
    a.notes.push_back(std::to_string(convs) + " conv2d layer" + (convs == 1 ? "" : "s") +
                      " cannot be split without experimental-conv-tp");
  if (convs > 0 && a.experimentalConvTP)
    a.notes.push_back(std::to_string(convs) + " grouped conv2d layer" + (convs == 1 ? "" : "s") +
                      " cannot be split (channels tied to the input's)");
  attentionNotes(a, ops);
  if (a.experimentalConvTP)
    a.notes.push_back("experimental conv TP: a conv2d splits its output channels, with the "
                      "batch_norm after it");
  size_t unnamed = llvm::count_if(ops, [](Operation *op) { return sourceName(op).empty(); });
  if (unnamed > 0)
    a.notes.push_back(std::to_string(unnamed) + " op" + (unnamed == 1 ? " has" : "s have") +
                      " no module path, so no root can select " + (unnamed == 1 ? "it" : "them"));
}

ArrayAttr names(Builder &b, const std::vector<Operation *> &ops) {
  SmallVector<Attribute> values;
  for (Operation *op : ops)
    values.push_back(b.getStringAttr(displayName(op)));
  return b.getArrayAttr(values);
}

ArrayAttr strings(Builder &b, const std::vector<std::string> &texts) {
  SmallVector<Attribute> values;
  for (const std::string &text : texts)
    values.push_back(b.getStringAttr(text));
  return b.getArrayAttr(values);
}

} // namespace

FailureOr<ModelAnalysis> analyzeModel(ModuleOp module, ArrayRef<std::string> roots,
                                      bool experimentalConvTP) {
  std::vector<Operation *> ops = modelOps(module);
  if (failed(checkRoots(module, roots, ops)))
    return failure();
  ModelAnalysis a;
  a.roots.assign(roots.begin(), roots.end());
  a.experimentalConvTP = experimentalConvTP;
  for (Operation *op : ops) {
    if (isa<StatefulNeuronOpInterface>(op))
      a.memoryModules.push_back(op);
    if (!underRoots(roots, op))
      continue;
    if (splittable(op, experimentalConvTP))
      a.tpCandidates.push_back(op);
    else if (isa<Conv2dOp>(op))
      a.unsupported.push_back(op);
  }
  addNotes(a, ops);
  return a;
}

AnalysisAttr analysisToAttribute(MLIRContext *context, const ModelAnalysis &a) {
  Builder b(context);
  return AnalysisAttr::get(context, strings(b, a.roots), a.experimentalConvTP,
                           names(b, a.memoryModules), names(b, a.tpCandidates),
                           names(b, a.unsupported), strings(b, a.notes));
}

llvm::json::Value analysisToJSON(AnalysisAttr analysis) {
  auto list = [](ArrayAttr array) {
    llvm::json::Array values;
    for (const std::string &text : stringList(array))
      values.push_back(text);
    return values;
  };
  return llvm::json::Object{
      {"memory_module_names", list(analysis.getMemoryModuleNames())},
      {"tensor_parallel_candidate_names", list(analysis.getTensorParallelCandidateNames())},
      {"unsupported_tensor_parallel_names", list(analysis.getUnsupportedTensorParallelNames())},
      {"notes", list(analysis.getNotes())},
      {"roots", list(analysis.getRoots())},
      {"experimental_conv_tp", analysis.getExperimentalConvTp()},
  };
}

AnalysisOptions storedAnalysisOptions(AnalysisAttr analysis) {
  return {stringList(analysis.getRoots()), analysis.getExperimentalConvTp()};
}

} // namespace snn
