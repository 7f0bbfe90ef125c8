//===- RuntimeBindings.cpp - The runtime's Python surface -----------------===//
//
// `Program` (Program.h: one rank's program over the caller's tensors), the process tuning
// apply gives, and leaving the job at exit.
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"
#include "Program.h"

#include "snn/Runtime/Autograd/SpikeLinearAutograd.h"
#include "snn/Runtime/Commands/CommandSupport.h"
#include "snn/Runtime/Execution/EventKernelChoice.h"
#include "snn/Runtime/Kernels/SpikeConvKernels.h"

#include <ATen/Parallel.h>

#include <pybind11/functional.h>
#include <pybind11/stl.h>
#include <torch/extension.h>

namespace py = pybind11;
using snn::python::Program;

namespace {

/// The caller's criterion, called from the pipeline's step (which runs without the GIL).
Program::Criterion wrapCriterion(py::function criterion) {
  auto shared = std::make_shared<py::function>(std::move(criterion));
  return [shared](const at::Tensor &output, const at::Tensor &labels) {
    py::gil_scoped_acquire gil;
    py::object loss = (*shared)(output, labels);
    if (!THPVariable_Check(loss.ptr()))
      throw snn::runtime::Error("the criterion must return a torch.Tensor, got " +
                                std::string(py::str(py::type::of(loss).attr("__name__"))));
    return loss.cast<at::Tensor>();
  };
}

using OptimizerRows =
    std::vector<std::tuple<std::string, int64_t, std::vector<std::pair<std::string, at::Tensor>>>>;

/// save_checkpoint / load_checkpoint in plain Python values: the position as a dict, the
/// optimizer state as (param, step, [(state name, tensor)]) rows.
void bindCheckpoints(py::class_<Program> &program) {
  program.def(
      "save_checkpoint",
      [](Program &p, const std::string &dir, py::dict position, const std::string &kind,
         const OptimizerRows &rows, int keep) {
        Program::CheckpointPosition place;
        place.step = position["step"].cast<int64_t>();
        place.epoch = position["epoch"].cast<int64_t>();
        place.batch = position["batch"].cast<int64_t>();
        place.seed = position["seed"].cast<uint64_t>();
        place.runId = position["run_id"].cast<uint64_t>();
        place.settings =
            position["settings"].cast<std::vector<std::pair<std::string, std::string>>>();
        std::vector<Program::OptimizerEntry> entries;
        for (const auto &[param, step, tensors] : rows)
          entries.push_back({param, step, tensors});
        return p.saveCheckpoint(dir, place, kind, entries, keep);
      },
      py::arg("dir"), py::arg("position"), py::arg("optimizer_kind"), py::arg("optimizer"),
      py::arg("keep"), "Collective: a whole snn-run checkpoint; its path on world rank 0");
  program.def(
      "load_checkpoint",
      [](Program &p, const std::string &dir) {
        Program::LoadedCheckpoint loaded = p.loadCheckpoint(dir);
        OptimizerRows rows;
        for (const Program::OptimizerEntry &entry : loaded.optimizer)
          rows.emplace_back(entry.param, entry.step, entry.tensors);
        py::dict out;
        out["path"] = loaded.path;
        out["step"] = loaded.position.step;
        out["epoch"] = loaded.position.epoch;
        out["batch"] = loaded.position.batch;
        out["seed"] = loaded.position.seed;
        out["run_id"] = loaded.position.runId;
        out["settings"] = loaded.position.settings;
        out["optimizer_kind"] = loaded.optimizerKind;
        out["optimizer"] = rows;
        out["generator_state"] = loaded.generatorState;
        return out;
      },
      py::arg("dir"),
      "The latest checkpoint in dir loaded into the bound tensors; its position, this "
      "rank's optimizer rows and the generator state");
}

void bindProgram(py::module_ &m) {
  py::class_<Program> program(m, "Program",
                      "One rank's program of an artifact, run on SpikeMesh's kernels over "
                      "the tensors bound to it (adopted, not copied)");
  program.def(py::init<const std::string &, bool>(), py::arg("artifact_dir"),
           py::arg("distributed") = false)
      .def("entries", &Program::entries,
           "(name, kind) of every parameter and buffer this rank's program reads")
      .def("model_names", &Program::modelNames,
           "Every parameter and buffer of the whole model, in manifest order")
      .def("local_parts", &Program::localParts, py::arg("whole"),
           "Collective: this rank's part of each whole tensor (world rank 0's values)")
      .def("bind", &Program::bind, py::arg("tensors"),
           "Builds the program over these tensors (this rank's parts)")
      .def("forward", &Program::forward, py::arg("input"), py::arg("training"),
           py::arg("repeat_time") = 0)
      .def(
          "train_step",
          [](Program &p, const at::Tensor &input, const at::Tensor &labels,
             int64_t repeatTime, py::function criterion) {
            return p.trainStep(input, labels, repeatTime, wrapCriterion(std::move(criterion)));
          },
          py::arg("input"), py::arg("labels"), py::arg("repeat_time"), py::arg("criterion"),
          "A pipeline's training step: the mean loss over microbatches and replicas")
      .def("finish_backward", &Program::finishBackward,
           "Completes the last backward's gradients over the data-parallel group")
      .def("sharded_parameters", &Program::shardedParameters,
           "fsdp: (name, values, gradient) of this rank's piece of each parameter")
      .def("whole_state", &Program::wholeState,
           "Collective over the tp and pp axes: every parameter and buffer whole")
      .def("load_whole_state", &Program::loadWholeState, py::arg("whole"),
           "This rank's part of each whole tensor, copied into what the program reads")
      .def("comm_stats", &Program::commStats,
           "(kind, mesh axis, calls, bytes, seconds) of the program's collectives")
      .def("reset_comm_stats", &Program::resetCommStats)
      .def("firing_counts", &Program::firingCounts,
           "(layer, spikes, elements, kernel) of each neuron layer since reset_firing_counts")
      .def("reset_firing_counts", &Program::resetFiringCounts)
      .def("copies_of", &Program::copiesOf, py::arg("name"),
           "How many ranks hold the values this rank holds of the parameter")
      .def("sum_over_world", &Program::sumOverWorld, py::arg("tensor"),
           "In place: the sum over every rank of the job")
      .def("broadcast", &Program::broadcast, py::arg("tensor"), py::arg("root"),
           "In place: the tensor of data-parallel rank `root` on every rank")
      .def_property("gradient_sync", &Program::gradientSync, &Program::setGradientSync,
                    "Whether backward averages gradients over the data-parallel group")
      .def_property("recomputed_stages", &Program::recomputedStages,
                    &Program::setRecomputedStages,
                    "A pipeline's logical stages that recompute their activations")
      .def_property_readonly("recomputes_segments", &Program::recomputesSegments,
                             "Whether training forwards recompute their segments in the "
                             "backward (memopt_level 1 on modes none, dp and tp)")
      .def_property("compressed_inputs", &Program::compressedInputs,
                    &Program::setCompressedInputs,
                    "Whether a recomputed stage keeps its spike inputs as bytes")
      .def_property_readonly("stage_costs", &Program::stageCosts,
                             "The planner's cost of each logical stage (FLOP-equivalents)")
      .def_property_readonly("local_stages", &Program::localStages,
                             "The logical stages this rank runs")
      .def_property_readonly("is_pipeline", &Program::isPipeline)
      .def_property_readonly("fully_sharded", &Program::fullySharded)
      .def_property_readonly("input_shape", &Program::inputShape)
      .def_property_readonly("output_shape", &Program::outputShape)
      .def_property_readonly("rank", &Program::rank)
      .def_property_readonly("world_size", &Program::worldSize)
      .def_property_readonly("data_parallel_rank", &Program::dataParallelRank)
      .def_property_readonly("data_parallel_size", &Program::dataParallelSize);
  bindCheckpoints(program);
}

/// Each layer shape under the automatic kernel choice, as dicts.
py::list eventKernelLayerDicts() {
  py::list rows;
  for (const snn::runtime::EventKernelLayer &layer : snn::runtime::eventKernelLayers()) {
    py::dict row;
    row["layer"] = layer.key;
    row["threshold"] = layer.crossover.threshold;
    row["from_file"] = layer.fromFile;
    row["event_calls"] = layer.eventCalls;
    row["dense_calls"] = layer.denseCalls;
    row["mean_density"] = layer.meanDensity();
    row["dense_seconds"] = layer.crossover.denseSeconds;
    row["event_seconds"] = layer.crossover.eventSeconds;
    row["event_seconds_without_spikes"] = layer.crossover.fixedSeconds;
    row["density"] = layer.crossover.density;
    rows.append(row);
  }
  return rows;
}

void bindKernelChoice(py::module_ &m) {
  m.def("set_event_kernel_densities",
        [](double linear, double conv) {
          snn::runtime::setSpikeLinearMaxDensity(linear);
          snn::runtime::setSpikeConvMaxDensity(conv);
        },
        py::arg("linear"), py::arg("conv"),
        "The density limits of the event-driven Linear and conv2d kernels (-1: the "
        "crossover measured per layer shape; 0: dense)");
  m.def("event_kernel_densities", [] {
    return std::make_pair(snn::runtime::spikeLinearMaxDensity(),
                          snn::runtime::spikeConvMaxDensity());
  });
  m.def("event_kernel_layers", &eventKernelLayerDicts,
        "Each layer shape under the automatic choice: its crossover and the calls it decided");
}

} // namespace

void snn::python::bindRuntime(py::module_ &m) {
  bindKernelChoice(m);
  bindProgram(m);
  m.def("tune_process",
        [] {
          snn::runtime::keepLargeAllocationsOnTheHeap();
          snn::runtime::setIntraOpThreads(at::get_num_threads());
        },
        "What snn-run does to its own process: OpenBLAS runs on one thread inside ATen's "
        "OpenMP team, and large allocations stay on the heap between steps");
  m.def("shutdown_world", &snn::python::shutdownWorld,
        "Leaves the torchrun job this process joined (spikemesh calls it at exit)");
}
