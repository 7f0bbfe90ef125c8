//===- RuntimeBindings.cpp - One rank's program for Python ----------------===//
//
// `Program(artifact_dir, tensors)` runs the artifact's program on the native kernels over
// the caller's tensors (the nn.Parameters and buffers of spikemesh's module), so a Python
// loss's backward runs the runtime's BPTT and fills those parameters' .grad.
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "snn/Runtime/Execution/Artifact.h"
#include "snn/Runtime/Execution/Boundary.h"
#include "snn/Runtime/Execution/Model.h"

#include <torch/extension.h>

#include <map>
#include <memory>

namespace py = pybind11;
using namespace snn::runtime;

namespace {

class Program {
public:
  Program(const std::string &dir, const std::map<std::string, at::Tensor> &tensors)
      : artifact(loadArtifact(dir)), model(artifact, tensors) {}

  /// `input` as the program takes it ([T, N, ...]), or a static [N, ...] batch repeated
  /// `repeatTime` times first.
  at::Tensor forward(const at::Tensor &input, bool training, int64_t repeatTime) {
    at::Tensor x = prepareInput(input.contiguous(), model.manifest().input, repeatTime,
                                "the model's input");
    py::gil_scoped_release release;
    return model.forward(x, training);
  }

  /// (name, kind) of every parameter and buffer, in the manifest's order.
  std::vector<std::pair<std::string, std::string>> entries() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const ParameterStore::Entry &e : model.params().entries())
      out.emplace_back(e.name, e.kind == ParameterKind::Parameter ? "parameter" : "buffer");
    return out;
  }

  std::vector<int64_t> inputShape() const { return model.manifest().input.shape; }
  std::vector<int64_t> outputShape() const { return model.manifest().output.shape; }

private:
  Artifact artifact;
  Model model;
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
                      "the tensors given (adopted, not copied)")
      .def(py::init<const std::string &, const std::map<std::string, at::Tensor> &>(),
           py::arg("artifact_dir"), py::arg("tensors"))
      .def("forward", &Program::forward, py::arg("input"), py::arg("training"),
           py::arg("repeat_time") = 0)
      .def("entries", &Program::entries)
      .def_property_readonly("input_shape", &Program::inputShape)
      .def_property_readonly("output_shape", &Program::outputShape);
  m.def("artifact_entries", &artifactEntries, py::arg("artifact_dir"),
        "(name, kind) of every parameter and buffer of an artifact, in the manifest's order");
  m.def("artifact_input_shape",
        [](const std::string &dir) { return loadArtifact(dir).manifest.input.shape; },
        py::arg("artifact_dir"), "The artifact's input shape (-1: the dynamic batch)");
}
