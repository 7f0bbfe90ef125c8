//===- PipelineLayout.cpp - Where a pp artifact's stages run --------------===//

#include "snn/Runtime/Execution/PipelineLayout.h"
#include "snn/Runtime/Distributed/Mesh.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Schema/MeshAxes.h"

#include <algorithm>
#include <map>
#include <set>

namespace meshaxis = snn::schema::meshaxis;

namespace snn::runtime {

namespace {

std::string joined(const std::vector<std::string> &names) {
  std::string text;
  for (const std::string &name : names)
    text += (text.empty() ? "" : ", ") + name;
  return text;
}

/// The pp axis' index in a mesh of a pp axis with optional dp and tp axes, in the
/// compiler's order [dp, pp, tp].
size_t pipelineAxis(const std::string &dir, const Manifest &manifest) {
  std::vector<std::string> axes = manifest.mesh.axes, expected;
  for (const char *name : {meshaxis::kDataParallel, meshaxis::kPipeline, meshaxis::kTensorParallel})
    if (name == std::string(meshaxis::kPipeline) ||
        std::find(axes.begin(), axes.end(), name) != axes.end())
      expected.push_back(name);
  if (axes != expected)
    throw Error(dir + ": plan mode 'pp' needs the mesh axes [pp], [dp, pp], [pp, tp] or "
                      "[dp, pp, tp]; the artifact's mesh has [" + joined(axes) + "]");
  return size_t(std::find(axes.begin(), axes.end(), meshaxis::kPipeline) - axes.begin());
}

/// Stage k's programs together list exactly the ranks at pp coordinate k mod S; when the
/// mesh has a tp axis, each program is that of one tp coordinate.
void checkPlacement(const std::string &dir, const Manifest &manifest,
                    size_t axis, const PipelineLayout &layout) {
  std::vector<int64_t> shape = manifest.mesh.shape;
  const std::vector<std::string> &axes = manifest.mesh.axes;
  size_t tp = size_t(std::find(axes.begin(), axes.end(), meshaxis::kTensorParallel) - axes.begin());
  std::map<int64_t, std::vector<int>> listed;
  for (const ProgramSpec &program : manifest.programs) {
    std::set<int64_t> tpCoordinates;
    for (int rank : program.ranks) {
      listed[program.stage].push_back(rank);
      if (tp < axes.size() && rank >= 0 && rank < int(manifest.worldSize))
        tpCoordinates.insert(dist::Mesh::coordinatesOf(shape, rank)[tp]);
    }
    if (tpCoordinates.size() > 1)
      throw Error(dir + ": manifest.json: the program " + program.file + " of pipeline stage " +
                  std::to_string(program.stage) +
                  " lists ranks at several tp coordinates; each tp coordinate has its own "
                  "program");
  }
  for (auto &[stage, got] : listed) {
    std::vector<int> want;
    for (int rank = 0; rank < int(manifest.worldSize); ++rank)
      if (dist::Mesh::coordinatesOf(shape, rank)[axis] == layout.coordinateOf(stage))
        want.push_back(rank);
    std::sort(got.begin(), got.end());
    if (got != want)
      throw Error(dir + ": manifest.json: the programs of pipeline stage " +
                  std::to_string(stage) + " must list the ranks at pp coordinate " +
                  std::to_string(layout.coordinateOf(stage)) +
                  " (row-major over the mesh), and only those");
  }
}

void checkPlanValues(const std::string &dir, const Manifest &manifest,
                     const PipelineLayout &layout) {
  const schema::PlanSpec &plan = manifest.plan;
  if (!plan.ppSchedule)
    throw Error(dir + ": plan mode 'pp' needs a pp_schedule (gpipe, 1f1b, "
                      "interleaved_1f1b or zero_bubble)");
  if (plan.ppMicrobatches < 1)
    throw Error(dir + ": plan.pp_microbatches must be at least 1, got " +
                std::to_string(plan.ppMicrobatches));
  if (plan.ppVirtualStages > 0 && plan.ppVirtualStages != layout.virtualStages)
    throw Error(dir + ": plan.pp_virtual_stages is " +
                std::to_string(plan.ppVirtualStages) + ", but " +
                std::to_string(layout.stageCount) + " stages over a pp axis of " +
                std::to_string(layout.ranks) + " make " +
                std::to_string(layout.virtualStages) + " per rank");
  for (const ParameterSpec &parameter : manifest.parameters)
    if (parameter.stage < 0 || parameter.stage >= layout.stageCount)
      throw Error(dir + ": manifest.json: parameter '" + parameter.name +
                  "' must name the stage (0 to " +
                  std::to_string(layout.stageCount - 1) + ") that holds it");
}

} // namespace

void checkRecomputedStages(const std::string &where, const std::vector<int64_t> &stages,
                           int64_t count) {
  std::set<int64_t> seen;
  for (int64_t stage : stages) {
    if (stage < 0 || stage >= count)
      throw Error(where + "pp_memopt_stages names stage " + std::to_string(stage) +
                  "; the pipeline has stages 0 to " + std::to_string(count - 1));
    if (!seen.insert(stage).second)
      throw Error(where + "pp_memopt_stages names stage " + std::to_string(stage) +
                  " twice");
  }
}

bool PipelineLayout::recomputes(int64_t stage) const {
  return std::find(recomputedStages.begin(), recomputedStages.end(), stage) !=
         recomputedStages.end();
}

std::vector<int64_t> PipelineLayout::stagesOf(int64_t coordinate) const {
  std::vector<int64_t> held;
  for (int64_t stage = coordinate; stage < stageCount; stage += ranks)
    held.push_back(stage);
  return held;
}

bool isPipeline(const Manifest &manifest) {
  return manifest.plan.mode == schema::ParallelMode::PP;
}

PipelineLayout readPipelineLayout(const std::string &dir,
                                  const Manifest &manifest) {
  int64_t count = manifest.stageCount();
  if (count == 0)
    throw Error(dir + ": plan mode 'pp' needs one program per pipeline stage "
                      "(programs with a 'stage')");
  if (!isPipeline(manifest))
    throw Error(dir + ": programs with pipeline stages need plan mode 'pp', not '" +
                std::string(schema::nameOf(manifest.plan.mode)) + "'");
  size_t axis = pipelineAxis(dir, manifest);
  PipelineLayout layout;
  layout.stageCount = count;
  layout.ranks = manifest.mesh.shape[axis];
  if (count % layout.ranks != 0)
    throw Error(dir + ": " + std::to_string(count) +
                " pipeline stages do not divide over a pp axis of " +
                std::to_string(layout.ranks));
  layout.virtualStages = count / layout.ranks;
  checkPlanValues(dir, manifest, layout);
  layout.microbatches = manifest.plan.ppMicrobatches;
  layout.schedule = *manifest.plan.ppSchedule;
  layout.delayWeightGrad = manifest.plan.ppDelayWgrad;
  checkRecomputedStages(dir + ": plan.", manifest.plan.ppMemoptStages, count);
  layout.recomputedStages = manifest.plan.ppMemoptStages;
  checkPlacement(dir, manifest, axis, layout);
  return layout;
}

} // namespace snn::runtime
