//===- Program.cpp - One rank's program for the Python API ----------------===//
//
// Program.h says what each part does. Every call that may wait for other ranks (the
// rendezvous, a collective, a pipeline step) releases the GIL first.
//
//===----------------------------------------------------------------------===//
#include "Program.h"

#include "snn/Runtime/Checkpoint/PipelineCheckpoint.h"
#include "snn/Runtime/Commands/CommandSupport.h"
#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Distributed/Environment.h"
#include "snn/Runtime/Execution/Boundary.h"
#include "snn/Runtime/Execution/PipelineLayout.h"
#include "snn/Runtime/Pipeline/PipelineSync.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Schema/MeshAxes.h"

#include <pybind11/pybind11.h>

#include <mutex>

namespace meshaxis = snn::schema::meshaxis;

namespace py = pybind11;
using namespace snn::runtime;

namespace snn::python {

namespace {

std::mutex worldMutex;
std::shared_ptr<dist::World> processWorld;

/// The process's place in the torchrun job, created at the first distributed Program and
/// kept until shutdownWorld(): a rank joins the rendezvous once.
std::shared_ptr<dist::World> joinWorld() {
  std::lock_guard<std::mutex> lock(worldMutex);
  if (!processWorld) {
    dist::DistEnvironment env = dist::readTorchrunEnvironment();
    py::gil_scoped_release release;
    processWorld = dist::World::initialize(env);
  }
  return processWorld;
}

const char *kindName(const ParameterSpec &spec) {
  return spec.kind == ParameterKind::Parameter && !spec.frozen ? "parameter" : "buffer";
}

/// Unsets a pipeline's criterion however its step ends.
struct CriterionScope {
  CriterionScope(PipelineEngine &engine, const Program::Criterion &criterion)
      : engine(engine) {
    engine.setLossFunction(criterion);
  }
  ~CriterionScope() { engine.setLossFunction(nullptr); }
  PipelineEngine &engine;
};

} // namespace

void shutdownWorld() {
  std::lock_guard<std::mutex> lock(worldMutex);
  py::gil_scoped_release release;
  processWorld.reset();
}

Program::Program(const std::string &dir, bool distributed)
    : run{distributed ? joinWorld() : nullptr}, artifact(loadRunArtifact(dir, "spikemesh.apply", run.world ? &run : nullptr)),
      mesh(createRunMesh(run.world ? &run : nullptr, artifact.manifest)),
      dp(createDataParallel(mesh, /*syncBatchNorm=*/true)), partition(artifact.manifest, mesh) {}

bool Program::holds(const std::string &name) const {
  if (artifact.stages.empty())
    return artifact.program.initializers.count(name) > 0;
  for (const StageProgram &stage : artifact.stages)
    if (stage.program.initializers.count(name))
      return true;
  return false;
}

std::vector<std::pair<std::string, std::string>> Program::entries() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const ParameterSpec &spec : artifact.manifest.parameters)
    if (holds(spec.name))
      out.emplace_back(spec.name, kindName(spec));
  return out;
}

std::vector<std::string> Program::modelNames() const {
  std::vector<std::string> out;
  for (const ParameterSpec &spec : artifact.manifest.parameters)
    out.push_back(spec.name);
  return out;
}

TensorMap Program::localParts(const TensorMap &whole) {
  TensorMap out;
  py::gil_scoped_release release;
  at::NoGradGuard noGrad;
  // Every rank broadcasts every entry, in manifest order, whichever stages it holds.
  for (const ParameterSpec &spec : artifact.manifest.parameters) {
    auto found = whole.find(spec.name);
    if (found == whole.end())
      throw Error("the model's state_dict has no " + std::string(kindName(spec)) + " '" +
                  spec.name + "', which the compiled program reads");
    at::Tensor tensor = found->second.to(at::kFloat).contiguous().clone();
    if (mesh.world().valid() && mesh.world().size() > 1)
      dist::broadcast(mesh.world(), tensor, 0);
    if (holds(spec.name))
      out[spec.name] = partition.localPart(spec.name, tensor, "the model");
  }
  return out;
}

void Program::bind(const TensorMap &tensors) {
  if (model)
    throw Error("the program is already bound");
  model.emplace(artifact, tensors);
  model->setFiringCounts(&firing);
  if (artifact.run.partitioned)
    model->setMesh(&mesh);
  if (artifact.run.pipeline) {
    bindPipeline();
    return;
  }
  if (!dp.group.valid() || dp.size() == 1)
    return;
  model->setDataParallel(&dp);
  py::gil_scoped_release release;
  if (shardingModeOf(artifact.manifest) == ShardingMode::Fsdp) {
    // The optimizer is the caller's: fsdp's own is never stepped.
    fsdp = makeFsdpSharding(*model, OptimizerConfig{}, dp);
    return;
  }
  std::vector<at::Tensor> trainable;
  for (const at::Tensor &param : model->params().parameters())
    if (param.requires_grad())
      trainable.push_back(param);
  reducer = std::make_unique<dist::GradBucketReducer>(dp.group, trainable);
}

/// The pipeline's dp replicas share gradients and running statistics after each step
/// (trainStep), as snn-run's pipeline trainer does; no hooks on backward.
void Program::bindPipeline() {
  if (artifact.manifest.plan.optimizer != schema::OptimizerStrategy::None)
    throw Error(std::string("a pipeline (plan mode pp) keeps each stage's parameters and "
                            "optimizer state whole on its ranks; optimizer_strategy '") +
                schema::nameOf(artifact.manifest.plan.optimizer) + "' cannot shard them");
  place = pipelinePlaceOf(artifact, mesh);
  py::gil_scoped_release release; // collective over the pp group
  engine = std::make_unique<PipelineEngine>(*model, *place, LossKind::CrossEntropy);
}

at::Tensor Program::programInput(const at::Tensor &input, int64_t repeatTime) {
  return prepareInput(input.contiguous(), bound().manifest().input, repeatTime,
                      "the model's input");
}

std::vector<std::tuple<std::string, double, double, std::string>>
Program::firingCounts() const {
  std::vector<std::tuple<std::string, double, double, std::string>> out;
  for (const runtime::LayerFiring &layer : firing.layers())
    out.emplace_back(layer.layer, layer.spikes, layer.elements, layer.kernel);
  return out;
}

at::Tensor Program::forward(const at::Tensor &input, bool training, int64_t repeatTime) {
  at::Tensor x = programInput(input, repeatTime);
  py::gil_scoped_release release;
  if (!engine)
    return bound().forward(x, training);
  if (training)
    throw Error("a pipeline plan (mode pp) trains through its schedule: call "
                "runtime.train_step(images, labels, criterion), or runtime.model.eval() for "
                "inference");
  return broadcastFromLastStage(engine->forward(x), *place);
}

double Program::trainStep(const at::Tensor &input, const at::Tensor &labels,
                          int64_t repeatTime, const Criterion &criterion) {
  if (!engine)
    throw Error("trainStep runs a pipeline plan's schedule; this plan's mode is '" +
                std::string(schema::nameOf(artifact.manifest.plan.mode)) + "'");
  at::Tensor x = programInput(input, repeatTime);
  if (labels.dim() < 1 || labels.size(0) != x.size(1))
    throw Error("labels: expected one per sample of the batch (" +
                std::to_string(x.size(1)) + "), got " +
                std::to_string(labels.dim() ? labels.size(0) : 0));
  CriterionScope scope(*engine, criterion);
  py::gil_scoped_release release;
  const dist::Group *replicas = dp.group.valid() ? &dp.group : nullptr;
  ReplicatedPipelineStep step = trainPipelineReplicas(*engine, *model, x, labels, replicas);
  int64_t microbatches = place->layout.microbatches;
  return step.lossSum / double(microbatches * (replicas ? replicas->size() : 1));
}

void Program::finishBackward() {
  py::gil_scoped_release release;
  if (fsdp)
    fsdp->finishBackward();
  else if (reducer)
    reducer->finish();
}

std::vector<std::tuple<std::string, at::Tensor, std::optional<at::Tensor>>>
Program::shardedParameters() const {
  std::vector<std::tuple<std::string, at::Tensor, std::optional<at::Tensor>>> out;
  if (!fsdp)
    return out;
  for (const ParameterSharding::LocalPiece &piece : fsdp->localPieces())
    out.emplace_back(piece.name, piece.values,
                     piece.grad.defined() ? std::optional<at::Tensor>(piece.grad)
                                          : std::nullopt);
  return out;
}

TensorMap Program::wholeState() {
  TensorMap out;
  Model &m = bound();
  py::gil_scoped_release release;
  at::NoGradGuard noGrad;
  if (fsdp)
    fsdp->materialize(); // collective over dp: every unit full until release()
  // Copies, taken before fsdp frees the full parameters again.
  std::vector<ParameterStore::Entry> copies;
  ParameterStore full = partition.wholeStore(m.params());
  for (const ParameterStore::Entry &e : full.entries())
    copies.push_back({e.name, e.kind, e.tensor.detach().clone()});
  if (fsdp)
    fsdp->release();
  ParameterStore whole(std::move(copies));
  if (place)
    whole = gatherPipelineStore(whole, m.manifest(),
                                mesh.groupIfSplit(meshaxis::kPipeline));
  for (const ParameterStore::Entry &e : whole.entries())
    out[e.name] = e.tensor;
  return out;
}

void Program::loadWholeState(const TensorMap &whole) {
  Model &m = bound();
  py::gil_scoped_release release;
  at::NoGradGuard noGrad;
  if (fsdp)
    fsdp->materialize(); // collective over dp
  for (const ParameterStore::Entry &e : m.params().entries()) {
    auto found = whole.find(e.name);
    if (found == whole.end())
      throw Error("load_state_dict: no tensor for '" + e.name + "'");
    e.tensor.copy_(partition.localPart(e.name, found->second.to(at::kFloat), "the state_dict"));
  }
  if (fsdp) {
    fsdp->reshard();
    fsdp->release();
  }
}

int64_t Program::copiesOf(const std::string &name) const {
  const ParameterSpec *split = partition.splitOf(name);
  int64_t copies = 1;
  for (const std::string &axis : mesh.axes()) {
    bool distinct = axis == meshaxis::kPipeline ||
                    (axis == meshaxis::kDataParallel && fullySharded()) ||
                    (split && split->meshAxis == axis);
    if (!distinct)
      copies *= mesh.axisSize(axis);
  }
  return copies;
}

void Program::sumOverWorld(at::Tensor tensor) {
  if (!mesh.world().valid() || mesh.world().size() == 1)
    return;
  py::gil_scoped_release release;
  at::NoGradGuard noGrad;
  dist::allReduce(mesh.world(), tensor);
}

void Program::broadcast(at::Tensor tensor, int root) {
  if (dataParallelSize() == 1)
    return;
  if (root < 0 || root >= dp.size())
    throw Error("broadcast: root " + std::to_string(root) + " is not a rank of the " +
                std::to_string(dp.size()) + " data-parallel ranks");
  py::gil_scoped_release release;
  at::NoGradGuard noGrad;
  dist::broadcast(dp.group, tensor, root);
}

std::vector<std::tuple<std::string, std::string, int64_t, int64_t, double>>
Program::commStats() const {
  std::vector<std::tuple<std::string, std::string, int64_t, int64_t, double>> out;
  for (const CommCount &count : mesh.stats().counts())
    out.emplace_back(count.kind, count.meshAxis, count.calls, count.bytes, count.seconds);
  return out;
}

void Program::setGradientSync(bool enabled) {
  if (fsdp && !enabled)
    throw Error("no_sync: an fsdp plan reduces each layer's gradients during backward and "
                "keeps only its shard, so it cannot accumulate unreduced gradients");
  if (reducer)
    reducer->setSyncEnabled(enabled);
}

runtime::PipelineEngine &Program::pipeline(const char *what) const {
  if (!engine)
    throw Error(std::string(what) + ": not a pipeline plan (mode '" +
                schema::nameOf(artifact.manifest.plan.mode) + "')");
  return *engine;
}

std::vector<int64_t> Program::recomputedStages() const {
  return pipeline("recomputed stages").place().layout.recomputedStages;
}

void Program::setRecomputedStages(const std::vector<int64_t> &stages) {
  pipeline("recomputed stages").setRecomputedStages(stages);
}

std::vector<int64_t> Program::localStages() const {
  const runtime::PipelinePlace &where = pipeline("local stages").place();
  return where.layout.stagesOf(where.coordinate);
}

bool Program::compressedInputs() const {
  return pipeline("compressed inputs").compressedInputs();
}

void Program::setCompressedInputs(bool enabled) {
  pipeline("compressed inputs").setCompressedInputs(enabled);
}

bool Program::gradientSync() const { return fsdp || (reducer && reducer->syncEnabled()); }

bool Program::fullySharded() const {
  return shardingModeOf(artifact.manifest) == ShardingMode::Fsdp && dp.group.valid() &&
         !artifact.run.pipeline;
}

int Program::rank() const { return run.world ? run.world->rank() : 0; }
int Program::worldSize() const { return run.world ? run.world->size() : 1; }
int Program::dataParallelRank() const { return dp.group.valid() ? dp.rank() : 0; }
int Program::dataParallelSize() const { return dp.group.valid() ? dp.size() : 1; }

Model &Program::bound() {
  if (!model)
    throw Error("the program is not bound to its parameters yet");
  return *model;
}

const Model &Program::bound() const {
  if (!model)
    throw Error("the program is not bound to its parameters yet");
  return *model;
}

} // namespace snn::python
