// Writes legal snn IR as the runtime artifact: ONNX programs (nodes of domain `spikemesh`
// mirroring the snn ops, as the schema's op table lists them; ProgramWriter.cpp) plus
// manifest.json (the schema's Manifest, formatted by the schema). See docs/artifact-format.md.
//
// An unpartitioned module is one program that every rank runs: a plan of the data-parallel
// family goes to the manifest with its mesh, `shard` annotations are looked through and
// `snn.*` planning attributes (e.g. snn.pp_stage) are not exported. A module partitioned by
// --snn-partition (tp, fsdp_tp) is one program per coordinate of its tp axis; a pp module split
// by --snn-split-pipeline-stages is one program per logical stage.

#include "snn/Export/ArtifactExporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include "snn/Dialect/SNN/IR/PlanSchema.h"
#include "snn/Dialect/SNN/IR/SNNOps.h"
#include "snn/Dialect/SNN/Transforms/CommunicationEstimate.h"
#include "snn/Schema/ArtifactOps.h"
#include "snn/Schema/Manifest.h"

#include "PipelineArtifact.h"
#include "ProgramWriter.h"
#include "snn/Schema/MeshAxes.h"

#include <fstream>

namespace meshaxis = snn::schema::meshaxis;

using namespace mlir;
namespace schema = snn::schema;

namespace {

/// The mesh axis a partitioned module's programs are per coordinate of (the plan's tp
/// axis), its index and its size; {"", -1, 1} for one program.
struct ProgramAxis {
  std::string name;
  int64_t dim = -1;
  int64_t size = 1;
};

ProgramAxis programAxis(snn::PlanAttr plan) {
  if (!plan || !plan.getPartitioned())
    return {};
  std::vector<std::string> axes = snn::stringList(plan.getMeshAxes());
  int64_t dim = plan.getTpMeshDim();
  if (dim < 0 || dim >= int64_t(axes.size()) || dim >= int64_t(plan.getMeshShape().size()))
    return {};
  return {axes[dim], dim, plan.getMeshShape()[dim]};
}

} // namespace

/// Every rank whose row-major coordinate on mesh dimension `dim` is `coordinate`.
std::vector<int> snn::ranksAt(const schema::MeshSpec &mesh, int64_t dim, int64_t coordinate) {
  int64_t world = 1, stride = 1;
  for (int64_t size : mesh.shape)
    world *= size;
  for (size_t d = size_t(dim) + 1; d < mesh.shape.size(); ++d)
    stride *= mesh.shape[d];
  std::vector<int> ranks;
  for (int64_t rank = 0; rank < world; ++rank)
    if ((rank / stride) % mesh.shape[dim] == coordinate)
      ranks.push_back(int(rank));
  return ranks;
}

namespace {

using snn::ranksAt;

/// Why `plan` cannot be exported: an unpartitioned tp / fsdp_tp plan (per-rank programs
/// not made yet), or a partitioned plan of another mode.
LogicalResult refuseMode(ModuleOp module, snn::PlanAttr plan) {
  schema::ParallelMode mode = plan.getMode();
  if (mode == schema::ParallelMode::TP || mode == schema::ParallelMode::FSDP_TP)
    return module.emitError("plan mode '")
           << schema::nameOf(mode)
           << "' is not partitioned: run --snn-partition before exporting (snn-compile runs it)";
  return module.emitError("plan mode '")
         << schema::nameOf(mode) << "' is marked partitioned, which only tp and fsdp_tp can be";
}

/// The plan, its mesh and explanation from `snn.plan`, and which ranks run which program:
/// for the data-parallel family (dp, dp + ZeRO, fsdp) the one program serves every rank of
/// the dp mesh; a partitioned module has one program per tp coordinate, run by every rank at
/// that coordinate. Rather than write an artifact that would compute something else, any
/// other plan is refused.
LogicalResult writePlan(ModuleOp module, schema::Manifest &manifest) {
  auto plan = module->getAttrOfType<snn::PlanAttr>(snn::kPlanAttrName);
  if (!plan)
    return success();
  if (!schema::canExportMode(plan.getMode(), plan.getPartitioned()))
    return refuseMode(module, plan);
  manifest.plan = snn::planSpecWithCommunication(module, plan);
  manifest.mesh = snn::toMeshSpec(plan);
  manifest.explanation = snn::toPlanExplanation(plan);
  const schema::MeshSpec &mesh = manifest.mesh;
  if (ProgramAxis axis = programAxis(plan); axis.dim >= 0) {
    manifest.worldSize = int(ranksAt(mesh, axis.dim, 0).size() * axis.size);
    manifest.programs.clear();
    for (int64_t i = 0; i < axis.size; ++i)
      manifest.programs.push_back(
          {"program_" + std::to_string(i) + ".onnx", ranksAt(mesh, axis.dim, i)});
    return success();
  }
  if (!schema::runsReplicatedProgram(manifest.plan.mode) || mesh.axes.size() != 1 ||
      mesh.axes[0] != meshaxis::kDataParallel || mesh.shape[0] < 1)
    return success();
  manifest.worldSize = int(mesh.shape[0]);
  manifest.programs[0].ranks.clear();
  for (int rank = 0; rank < manifest.worldSize; ++rank)
    manifest.programs[0].ranks.push_back(rank);
  return success();
}

LogicalResult writeFiles(StringRef dir, ArrayRef<onnx::ModelProto> programs,
                         const schema::Manifest &manifest, Location loc) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return emitError(loc, "cannot create '" + dir + "': " + ec.message());
  for (auto [program, spec] : llvm::zip_equal(programs, manifest.programs)) {
    SmallString<256> programPath(dir);
    llvm::sys::path::append(programPath, spec.file);
    std::ofstream out(programPath.str().str(), std::ios::binary);
    if (!out || !program.SerializeToOstream(&out))
      return emitError(loc, "cannot write '" + programPath + "'");
  }
  SmallString<256> manifestPath(dir);
  llvm::sys::path::append(manifestPath, "manifest.json");
  std::ofstream out(manifestPath.str().str());
  out << schema::formatManifest(manifest);
  if (!out)
    return emitError(loc, "cannot write '" + manifestPath + "'");
  return success();
}

/// Moves the finished temporary directory to `dir`, replacing an older artifact there.
LogicalResult commitDirectory(StringRef tmp, StringRef dir, Location loc) {
  if (llvm::sys::fs::exists(dir)) {
    if (!llvm::sys::fs::is_directory(dir))
      return emitError(loc, "'" + dir + "' exists and is not a directory");
    if (std::error_code ec = llvm::sys::fs::remove_directories(dir))
      return emitError(loc, "cannot replace '" + dir + "': " + ec.message());
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmp, dir))
    return emitError(loc, "cannot move artifact into '" + dir + "': " + ec.message());
  return success();
}

/// The programs and manifest of `module`: one program, or one per tp coordinate.
LogicalResult buildArtifact(ModuleOp module, std::vector<onnx::ModelProto> &programs,
                            schema::Manifest &manifest) {
  auto func = module.lookupSymbol<func::FuncOp>("main");
  if (!func)
    return module.emitError("module has no @main function to export");
  manifest.programs = {{"program_0.onnx", {0}}};
  ProgramAxis axis = programAxis(module->getAttrOfType<snn::PlanAttr>(snn::kPlanAttrName));
  FailureOr<snn::Partitioning> partitioning =
      snn::findSlicedParameters(func, axis.name, axis.size);
  if (failed(partitioning))
    return failure();
  programs.resize(1);
  if (failed(snn::writeProgram(func, *partitioning, programs[0], manifest)) ||
      failed(writePlan(module, manifest)))
    return failure();
  for (int64_t part = 1; part < axis.size; ++part)
    programs.push_back(snn::programForPart(programs[0], *partitioning, part));
  // Each partitioned program says whose it is, so that a rank never runs another's.
  if (axis.dim >= 0)
    for (int64_t part = 0; part < axis.size; ++part)
      snn::setMeshCoordinate(programs[size_t(part)], {{axis.name, part}});
  return success();
}

} // namespace

LogicalResult snn::exportArtifact(ModuleOp module, StringRef directory) {
  std::vector<onnx::ModelProto> programs;
  schema::Manifest manifest;
  manifest.producer = schema::kArtifactProducer;
  if (auto source = module->getAttrOfType<StringAttr>("snn.source"))
    manifest.source = llvm::sys::path::filename(source.getValue()).str();
  auto plan = module->getAttrOfType<snn::PlanAttr>(snn::kPlanAttrName);
  bool pipeline = plan && plan.getMode() == schema::ParallelMode::PP;
  if (failed(pipeline ? snn::buildPipelineArtifact(module, plan, programs, manifest)
                      : buildArtifact(module, programs, manifest)))
    return failure();
  // The importer's mark of a model that repeats its static input over T (any plan keeps the
  // first program's input whole over T).
  manifest.input.repeatedOverTime =
      manifest.input.timeMajor && module->hasAttr(snn::kInputRepeatedOverTimeAttrName);

  SmallString<256> tmp(directory);
  while (!tmp.empty() && llvm::sys::path::is_separator(tmp.back()))
    tmp.pop_back();
  tmp += ".tmp-" + std::to_string(llvm::sys::Process::getProcessId());
  (void)llvm::sys::fs::remove_directories(tmp);
  if (failed(writeFiles(tmp, programs, manifest, module.getLoc()))) {
    (void)llvm::sys::fs::remove_directories(tmp);
    return failure();
  }
  if (failed(commitDirectory(tmp, directory, module.getLoc()))) {
    (void)llvm::sys::fs::remove_directories(tmp);
    return failure();
  }
  return success();
}
