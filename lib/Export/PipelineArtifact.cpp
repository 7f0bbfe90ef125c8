//===- PipelineArtifact.cpp - A split pp module as stage programs ---------===//
//
// See PipelineArtifact.h. Each stage function is written by the ProgramWriter as it writes
// @main (its `snn.recv` and `snn.send` are nodes like any other); what is pipeline-specific is
// which ranks run which program and where each parameter lives.
//
//===----------------------------------------------------------------------===//
#include "PipelineArtifact.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "snn/Dialect/SNN/IR/PlanSchema.h"
#include "snn/Dialect/SNN/Transforms/CommunicationEstimate.h"

#include "ProgramWriter.h"

#include <algorithm>
#include <iterator>

using namespace mlir;
namespace schema = snn::schema;

namespace snn {

namespace {

/// The stage functions by logical stage: one per stage of the plan's layout, the first
/// taking the model's input, the last returning its output, the others neither.
FailureOr<SmallVector<func::FuncOp>> stageFunctions(ModuleOp module, PlanAttr plan) {
  int64_t count = int64_t(plan.getPpLayout().size());
  SmallVector<func::FuncOp> stages(static_cast<size_t>(count), func::FuncOp());
  for (auto func : module.getOps<func::FuncOp>()) {
    auto stage = func->getAttrOfType<IntegerAttr>(kStageAttrName);
    if (!stage)
      return func.emitError("@") << func.getSymName()
                                 << " is not a pipeline stage (no snn.pp_stage): a split pp "
                                    "module holds only stage functions";
    int64_t k = stage.getInt();
    if (k < 0 || k >= count || stages[k])
      return func.emitError("@") << func.getSymName() << " has logical stage " << k
                                 << ": the plan has " << count
                                 << " logical stages, each in one function";
    stages[k] = func;
  }
  for (int64_t k = 0; k < count; ++k) {
    if (!stages[k])
      return module.emitError("no function for logical pipeline stage ")
             << k << " of the plan's " << count;
    unsigned inputs = k == 0 ? 1 : 0, outputs = k + 1 == count ? 1 : 0;
    if (stages[k].getNumArguments() != inputs || stages[k].getNumResults() != outputs)
      return stages[k].emitError("@")
             << stages[k].getSymName() << " takes " << stages[k].getNumArguments()
             << " input(s) and returns " << stages[k].getNumResults()
             << ": only the first stage takes the model's input and only the last returns "
                "its output";
  }
  return stages;
}

/// The plan's pp axis and its size S, which must divide the K logical stages (stage k runs
/// on pp coordinate k mod S).
FailureOr<std::pair<int64_t, int64_t>> pipelineAxis(ModuleOp module, PlanAttr plan) {
  int64_t dim = plan.getPpMeshDim();
  ArrayRef<int64_t> shape = plan.getMeshShape();
  if (dim < 0 || dim >= int64_t(shape.size()) || shape[dim] < 1)
    return module.emitError("plan mode 'pp' has no pp axis in its mesh (pp_mesh_dim ")
           << dim << ")";
  int64_t count = int64_t(plan.getPpLayout().size());
  if (count % shape[dim] != 0)
    return module.emitError("the plan's ")
           << count << " logical pipeline stages do not divide over pp=" << shape[dim];
  return std::make_pair(dim, shape[dim]);
}

/// The plan's tp axis (name, dimension, size) when its stages are tensor-parallel.
struct StageTpAxis {
  std::string name;
  int64_t dim = -1, size = 1;
};

StageTpAxis stageTpAxis(PlanAttr plan) {
  int64_t dim = plan.getTpMeshDim();
  std::vector<std::string> axes = stringList(plan.getMeshAxes());
  if (!plan.getPartitioned() || dim < 0 || dim >= int64_t(axes.size()))
    return {};
  return {axes[dim], dim, plan.getMeshShape()[dim]};
}

/// The ranks that run logical stage `k`'s program for tp coordinate `part`.
std::vector<int> stageRanks(const schema::MeshSpec &mesh, std::pair<int64_t, int64_t> ppAxis,
                            const StageTpAxis &tp, int64_t k, int64_t part) {
  std::vector<int> ranks = ranksAt(mesh, ppAxis.first, k % ppAxis.second);
  if (tp.dim < 0)
    return ranks;
  std::vector<int> atPart = ranksAt(mesh, tp.dim, part), both;
  std::set_intersection(ranks.begin(), ranks.end(), atPart.begin(), atPart.end(),
                        std::back_inserter(both));
  return both;
}

} // namespace

LogicalResult buildPipelineArtifact(ModuleOp module, PlanAttr plan,
                                    std::vector<onnx::ModelProto> &programs,
                                    schema::Manifest &manifest) {
  if (module.lookupSymbol("main"))
    return module.emitError("plan mode 'pp' is not split into stages: run "
                            "--snn-split-pipeline-stages before exporting (snn-compile runs it)");
  if (plan.getTpMeshDim() >= 0 && !plan.getPartitioned())
    return module.emitError("plan mode 'pp' with a tp axis is not partitioned: run "
                            "--snn-partition before the split (snn-compile runs it)");
  FailureOr<SmallVector<func::FuncOp>> stages = stageFunctions(module, plan);
  FailureOr<std::pair<int64_t, int64_t>> axis = pipelineAxis(module, plan);
  if (failed(stages) || failed(axis))
    return failure();
  manifest.plan = planSpecWithCommunication(module, plan);
  manifest.mesh = toMeshSpec(plan);
  manifest.explanation = toPlanExplanation(plan);
  manifest.worldSize = 1;
  for (int64_t size : manifest.mesh.shape)
    manifest.worldSize *= int(size);
  StageTpAxis tp = stageTpAxis(plan);
  for (auto [k, func] : llvm::enumerate(*stages)) {
    // A stage program holds its parameters whole, or its tp part of each split one.
    FailureOr<Partitioning> partitioning = findSlicedParameters(func, tp.name, tp.size);
    if (failed(partitioning))
      return failure();
    onnx::ModelProto program;
    schema::Manifest part;
    if (failed(writeProgram(func, *partitioning, program, part)))
      return failure();
    if (k == 0)
      manifest.input = part.input;
    if (k + 1 == stages->size())
      manifest.output = part.output;
    for (schema::ParameterSpec &parameter : part.parameters)
      manifest.parameters.push_back(std::move(parameter));
    for (int64_t c = 0; c < tp.size; ++c) {
      std::string file = "program_" + std::to_string(k) +
                         (tp.dim >= 0 ? "_" + std::to_string(c) : std::string()) + ".onnx";
      programs.push_back(c == 0 ? program : programForPart(program, *partitioning, c));
      // Whose program it is: the pp coordinate that runs stage k, and its tp part.
      std::vector<std::pair<std::string, int64_t>> coordinate{
          {manifest.mesh.axes[size_t(axis->first)], int64_t(k) % axis->second}};
      if (tp.dim >= 0)
        coordinate.push_back({tp.name, c});
      setMeshCoordinate(programs.back(), coordinate);
      manifest.programs.push_back(
          {file, stageRanks(manifest.mesh, *axis, tp, int64_t(k), c), int64_t(k)});
    }
  }
  return success();
}

} // namespace snn
