//===- Model.cpp - A trainable model built from an artifact ---------------===//

#include "snn/Runtime/Execution/Model.h"
#include "snn/Runtime/Execution/StageBoundary.h"
#include "snn/Runtime/Support/Error.h"

#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>

namespace snn::runtime {

namespace {

std::vector<const Graph *> programsOf(const Artifact &artifact) {
  if (artifact.stages.empty())
    return {&artifact.program};
  std::vector<const Graph *> programs;
  for (const StageProgram &stage : artifact.stages)
    programs.push_back(&stage.program);
  return programs;
}

/// Autograd cannot save an inference tensor (one made under InferenceMode,
/// e.g. by a loader) for backward; a plain copy can be.
at::Tensor trainable(const at::Tensor &input) {
  return input.defined() && input.is_inference() ? input.clone() : input;
}

} // namespace

Model::Model(const Artifact &artifact)
    : manifestCopy(artifact.manifest), store(artifact.manifest, programsOf(artifact)) {
  buildExecutors(artifact);
}

Model::Model(const Artifact &artifact, const std::map<std::string, at::Tensor> &adopted)
    : manifestCopy(artifact.manifest), store(artifact.manifest, programsOf(artifact)) {
  for (const auto &[name, tensor] : adopted)
    store.adopt(name, tensor);
  buildExecutors(artifact);
}

bool planRecomputesSegments(const Manifest &manifest) {
  const schema::PlanSpec &plan = manifest.plan;
  return plan.memoptLevel >= 1 &&
         (plan.mode == schema::ParallelMode::None || plan.mode == schema::ParallelMode::DP ||
          plan.mode == schema::ParallelMode::TP);
}

void Model::buildExecutors(const Artifact &artifact) {
  const std::string &in = artifact.manifest.input.name;
  const std::string &out = artifact.manifest.output.name;
  if (artifact.stages.empty()) {
    execs.emplace_back(artifact.program, in, out, &store);
    recompute = planRecomputesSegments(artifact.manifest);
    return;
  }
  int64_t count = artifact.manifest.stageCount();
  for (const StageProgram &stage : artifact.stages) {
    interfaces.push_back(
        readStageInterface(stage.program, stage.stage, count, in, out));
    const StageInterface &boundary = interfaces.back();
    execs.emplace_back(stage.program, boundary.hasInput ? in : "",
                       boundary.hasOutput ? out : "", &store);
    stageIds.push_back(stage.stage);
    nodes.push_back(stage.program.nodes);
  }
}

size_t Model::stageIndex(int64_t stage) const {
  for (size_t i = 0; i < stageIds.size(); ++i)
    if (stageIds[i] == stage)
      return i;
  throw Error("pipeline stage " + std::to_string(stage) +
              " does not run on this rank");
}

const StageInterface &Model::stageInterface(int64_t stage) const {
  return interfaces[stageIndex(stage)];
}

const std::vector<Node> &Model::stageNodes(int64_t stage) const {
  return nodes[stageIndex(stage)];
}

at::Tensor Model::runStage(int64_t stage, const at::Tensor &input,
                           StageBoundary &boundary, StagePass pass,
                           WeightGradQueue *weightGrads, bool denseLayers) {
  const Executor &exec = execs[stageIndex(stage)];
  RunContext context;
  context.training = pass != StagePass::Eval;
  context.keepRunningStatistics = pass == StagePass::Recomputation;
  context.mesh = mesh;
  context.boundary = &boundary;
  context.firing = firing;
  context.denseLayers = denseLayers;
  boundary.sent.clear();
  if (pass == StagePass::Eval) {
    c10::InferenceMode guard;
    return exec.run(input, context, observer);
  }
  bool graph = pass != StagePass::TrainingWithoutGraph;
  c10::AutoGradMode gradMode(graph);
  if (graph)
    context.weightGrads = weightGrads;
  return exec.run(trainable(input), context, observer);
}

at::Tensor Model::forwardThroughStages(const at::Tensor &input, bool training) {
  if (int64_t(stageIds.size()) != manifestCopy.stageCount())
    throw Error("this rank runs " + std::to_string(stageIds.size()) + " of " +
                std::to_string(manifestCopy.stageCount()) +
                " pipeline stages; the others run on other ranks, under the "
                "pipeline schedule");
  StageBoundary boundary;
  at::Tensor output;
  for (int64_t stage : stageIds) {
    output = runStage(stage, input, boundary,
                      training ? StagePass::Training : StagePass::Eval);
    boundary.received = std::move(boundary.sent);
  }
  return output;
}

void Model::setRecomputation(bool on) {
  if (on && isPipeline())
    throw Error("a pipeline recomputes whole stages (the plan's pp_memopt_stages), not "
                "segments of one program");
  recompute = on;
}

at::Tensor Model::forward(const at::Tensor &input, bool training) {
  if (isPipeline())
    return forwardThroughStages(input, training);
  RunContext context;
  context.training = training;
  context.dataParallel = training ? dataParallel : nullptr;
  context.mesh = mesh;
  context.firing = firing;
  if (training) {
    // Record the graph even if the caller's thread had gradients off.
    c10::AutoGradMode gradOn(true);
    if (recompute) {
      if (observer)
        throw Error("recomputation runs without an execution observer (fsdp gathers "
                    "parameters per step)");
      return execs.front().runRecomputingSegments(trainable(input), context);
    }
    return execs.front().run(trainable(input), context, observer);
  }
  c10::InferenceMode guard;
  return execs.front().run(input, context, observer);
}

} // namespace snn::runtime
