//===- RuntimeBindings.cpp - One rank's program for Python ----------------===//
//
// `Program(artifact_dir, tensors, distributed)` runs this rank's program of an artifact on the
// native kernels over the caller's tensors (the nn.Parameters and buffers of spikemesh's
// module), so a Python loss's backward runs the runtime's BPTT and fills their .grad.
//
// Under torchrun (`distributed`), the process joins the job once (one dist::World per
// process, from torchrun's variables, kept until exit) and the program runs as a rank of the
// artifact's mesh: every rank starts from world rank 0's tensors (as DistributedDataParallel
// does), a tp rank holds its part of each split parameter and runs its partition with the
// plan's collectives, SyncBatchNorm and Dropout run over the dp group, and the gradients are
// averaged over the dp group by the bucketed all-reduce that overlaps with backward;
// `finish_backward()` completes it (spikemesh queues it at the end of every backward).
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Distributed/Environment.h"
#include "snn/Runtime/Distributed/GradReducer.h"
#include "snn/Runtime/Execution/Artifact.h"
#include "snn/Runtime/Execution/Boundary.h"
#include "snn/Runtime/Execution/DataParallel.h"
#include "snn/Runtime/Execution/Model.h"
#include "snn/Runtime/Execution/ParameterPartition.h"
#include "snn/Runtime/Execution/PipelineLayout.h"
#include "snn/Runtime/Sharding/ParameterSharding.h"

#include <pybind11/stl.h>
#include <torch/extension.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>

namespace py = pybind11;
using namespace snn::runtime;

namespace {

/// The process's place in the torchrun job, created at the first distributed Program and
/// kept until shutdown_world() (spikemesh calls it at exit): a rank joins the rendezvous once.
std::mutex worldMutex;
std::shared_ptr<snn::dist::World> processWorld;

std::shared_ptr<snn::dist::World> joinWorld() {
  std::lock_guard<std::mutex> lock(worldMutex);
  if (!processWorld) {
    snn::dist::DistEnvironment env = snn::dist::readTorchrunEnvironment();
    py::gil_scoped_release release; // the rendezvous waits for the other ranks
    processWorld = snn::dist::World::initialize(env);
  }
  return processWorld;
}

void shutdownWorld() {
  std::lock_guard<std::mutex> lock(worldMutex);
  py::gil_scoped_release release;
  processWorld.reset();
}

Artifact loadProgramArtifact(const std::string &dir, const DistributedRun &run) {
  Artifact artifact = loadRunArtifact(dir, "spikemesh.apply", run.world ? &run : nullptr);
  if (run.world && isPipeline(artifact.manifest))
    throw Error("artifact '" + dir + "': plan mode '" +
                std::string(snn::schema::nameOf(artifact.manifest.plan.mode)) +
                "' is not run by the Python API on many ranks yet (snn-run runs it)");
  return artifact;
}

using TensorMap = std::map<std::string, at::Tensor>;

/// Built in two steps, because the caller's parameters must exist before the program binds
/// them and their shapes are this rank's (a tp split): `local_parts` turns the model's
/// whole tensors into this rank's parts, the caller makes its nn.Parameters of them, and
/// `bind` builds the program over those very tensors.
class Program {
public:
  Program(const std::string &dir, bool distributed)
      : run{distributed ? joinWorld() : nullptr}, artifact(loadProgramArtifact(dir, run)),
        mesh(createRunMesh(run.world ? &run : nullptr, artifact.manifest)),
        dp(createDataParallel(mesh, /*syncBatchNorm=*/true)), partition(artifact.manifest, mesh) {}

  /// Collective: every rank starts from world rank 0's whole tensors (as
  /// DistributedDataParallel does); returns this rank's part of each manifest entry.
  TensorMap localParts(const TensorMap &whole) {
    TensorMap out;
    py::gil_scoped_release release;
    at::NoGradGuard noGrad;
    for (const ParameterSpec &spec : artifact.manifest.parameters) {
      auto found = whole.find(spec.name);
      if (found == whole.end())
        throw Error("the model's state_dict has no " + std::string(kindName(spec.kind)) +
                    " '" + spec.name + "', which the compiled program reads");
      at::Tensor tensor = found->second.to(at::kFloat).contiguous().clone();
      if (mesh.world().valid() && mesh.world().size() > 1)
        snn::dist::broadcast(mesh.world(), tensor, 0);
      out[spec.name] = partition.localPart(spec.name, tensor, "the model");
    }
    return out;
  }

  /// The program over `tensors` (this rank's parts, adopted); on a data-parallel axis the
  /// trainable ones' gradients are averaged over it from then on.
  void bind(const TensorMap &tensors) {
    if (model)
      throw Error("the program is already bound");
    model.emplace(artifact, tensors);
    if (isPartitioned(artifact.manifest))
      model->setMesh(&mesh);
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
    reducer = std::make_unique<snn::dist::GradBucketReducer>(dp.group, trainable);
  }

  /// fsdp: (name, values, gradient) of this rank's piece of each parameter (ParameterSharding
  /// ::localPieces); the values are what the next forward gathers, the gradient is the last
  /// backward's average (None before one). Empty for the other modes.
  std::vector<std::tuple<std::string, at::Tensor, std::optional<at::Tensor>>>
  shardedParameters() const {
    std::vector<std::tuple<std::string, at::Tensor, std::optional<at::Tensor>>> out;
    if (!fsdp)
      return out;
    for (const ParameterSharding::LocalPiece &piece : fsdp->localPieces())
      out.emplace_back(piece.name, piece.values,
                       piece.grad.defined() ? std::optional<at::Tensor>(piece.grad)
                                            : std::nullopt);
    return out;
  }

  /// `input` as the program takes it ([T, N, ...]), or a static [N, ...] batch repeated
  /// `repeatTime` times first.
  at::Tensor forward(const at::Tensor &input, bool training, int64_t repeatTime) {
    Model &m = bound();
    at::Tensor x = prepareInput(input.contiguous(), m.manifest().input, repeatTime,
                                "the model's input");
    py::gil_scoped_release release;
    return m.forward(x, training);
  }

  /// Averages the gradients of the backward that just ran over the dp group.
  void finishBackward() {
    py::gil_scoped_release release;
    if (fsdp)
      fsdp->finishBackward();
    else if (reducer)
      reducer->finish();
  }

  /// Collective over the tp axis: every parameter and buffer whole, by name.
  TensorMap wholeState() {
    TensorMap out;
    py::gil_scoped_release release;
    at::NoGradGuard noGrad;
    Model &m = bound();
    if (fsdp)
      fsdp->materialize(); // collective over dp: every unit full until release()
    for (const ParameterStore::Entry &e : m.params().entries())
      out[e.name] = partition.gatherWhole(e.name, e.tensor.detach()).clone();
    if (fsdp)
      fsdp->release();
    return out;
  }

  /// `tensor` (same shape on every rank) becomes data-parallel rank `root`'s, in place.
  void broadcast(at::Tensor tensor, int root) {
    if (dataParallelSize() == 1)
      return;
    if (root < 0 || root >= dp.size())
      throw Error("broadcast: root " + std::to_string(root) + " is not a rank of the " +
                  std::to_string(dp.size()) + " data-parallel ranks");
    py::gil_scoped_release release;
    at::NoGradGuard noGrad;
    snn::dist::broadcast(dp.group, tensor, root);
  }

  /// Off: backwards accumulate this rank's gradients locally (no all-reduce, no
  /// finish_backward) until it is switched on again for the last backward.
  void setGradientSync(bool enabled) {
    if (fsdp && !enabled)
      throw Error("no_sync: an fsdp plan reduces each layer's gradients during backward and "
                  "keeps only its shard, so it cannot accumulate unreduced gradients");
    if (reducer)
      reducer->setSyncEnabled(enabled);
  }
  bool gradientSync() const { return fsdp || (reducer && reducer->syncEnabled()); }

  /// (name, kind) of every parameter and buffer, in the manifest's order.
  std::vector<std::pair<std::string, std::string>> entries() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const ParameterSpec &p : artifact.manifest.parameters)
      out.emplace_back(p.name, kindName(p.kind));
    return out;
  }

  std::vector<int64_t> inputShape() const { return artifact.manifest.input.shape; }
  std::vector<int64_t> outputShape() const { return artifact.manifest.output.shape; }
  int rank() const { return run.world ? run.world->rank() : 0; }
  int worldSize() const { return run.world ? run.world->size() : 1; }
  /// fsdp on a dp axis of several ranks: bind's parameters are gathered per layer and this
  /// rank keeps only sharded_parameters().
  bool fullySharded() const {
    return shardingModeOf(artifact.manifest) == ShardingMode::Fsdp && dp.group.valid();
  }
  int dataParallelRank() const { return dp.group.valid() ? dp.rank() : 0; }
  int dataParallelSize() const { return dp.group.valid() ? dp.size() : 1; }

private:
  static const char *kindName(ParameterKind kind) {
    return kind == ParameterKind::Parameter ? "parameter" : "buffer";
  }
  Model &bound() {
    if (!model)
      throw Error("the program is not bound to its parameters yet");
    return *model;
  }

  DistributedRun run;
  Artifact artifact;
  MeshContext mesh;
  DataParallelContext dp;
  ParameterPartition partition;
  std::optional<Model> model;
  std::unique_ptr<snn::dist::GradBucketReducer> reducer; // dp, zero
  std::unique_ptr<ParameterSharding> fsdp;                // fsdp, fsdp_tp
};

/// (name, kind) of every parameter and buffer an artifact's manifest lists.
std::vector<std::pair<std::string, std::string>> artifactEntries(const std::string &dir) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto &p : loadArtifact(dir).manifest.parameters)
    out.emplace_back(p.name, p.kind == ParameterKind::Parameter ? "parameter" : "buffer");
  return out;
}

} // namespace

void snn::python::bindRuntime(py::module_ &m) {
  py::class_<Program>(m, "Program",
                      "One rank's program of an artifact, run on SpikeMesh's kernels over "
                      "the tensors bound to it (adopted, not copied)")
      .def(py::init<const std::string &, bool>(), py::arg("artifact_dir"),
           py::arg("distributed") = false)
      .def("local_parts", &Program::localParts, py::arg("whole"),
           "Collective: this rank's part of each whole tensor (world rank 0's values)")
      .def("bind", &Program::bind, py::arg("tensors"),
           "Builds the program over these tensors (this rank's parts)")
      .def("sharded_parameters", &Program::shardedParameters,
           "fsdp: (name, values, gradient) of this rank's piece of each parameter")
      .def("whole_state", &Program::wholeState,
           "Collective over the tp axis: every parameter and buffer whole")
      .def("forward", &Program::forward, py::arg("input"), py::arg("training"),
           py::arg("repeat_time") = 0)
      .def("finish_backward", &Program::finishBackward,
           "Averages the last backward's gradients over the data-parallel group")
      .def("broadcast", &Program::broadcast, py::arg("tensor"), py::arg("root"),
           "In place: the tensor of data-parallel rank `root` on every rank")
      .def_property("gradient_sync", &Program::gradientSync, &Program::setGradientSync,
                    "Whether backward averages gradients over the data-parallel group")
      .def("entries", &Program::entries)
      .def_property_readonly("input_shape", &Program::inputShape)
      .def_property_readonly("output_shape", &Program::outputShape)
      .def_property_readonly("rank", &Program::rank)
      .def_property_readonly("world_size", &Program::worldSize)
      .def_property_readonly("fully_sharded", &Program::fullySharded)
      .def_property_readonly("data_parallel_rank", &Program::dataParallelRank)
      .def_property_readonly("data_parallel_size", &Program::dataParallelSize);
  m.def("artifact_entries", &artifactEntries, py::arg("artifact_dir"),
        "(name, kind) of every parameter and buffer of an artifact, in the manifest's order");
  m.def("artifact_input_shape",
        [](const std::string &dir) { return loadArtifact(dir).manifest.input.shape; },
        py::arg("artifact_dir"), "The artifact's input shape (-1: the dynamic batch)");
  m.def("shutdown_world", &shutdownWorld,
        "Leaves the torchrun job this process joined (spikemesh calls it at exit)");
}
