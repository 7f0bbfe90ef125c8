//===- CompilerBindings.cpp - compile() for Python ------------------------===//
#include "Bindings.h"

#include "snn/Driver/Compile.h"
#include "snn/Schema/MeshAxes.h"
#include "snn/Schema/UserDeviceProfile.h"

#include <pybind11/stl.h>

namespace py = pybind11;
using namespace snn;

namespace {

/// Compiles with the GIL released (the pipeline takes seconds on a large model); a failure
/// raises SpikeMeshError whose message is the diagnostics' lines.
py::dict compile(const std::string &modelPath, const std::string &artifactDir, bool plan,
                 const std::string &analyzeOptions, const std::string &planOptions,
                 std::optional<double> nirDt, int64_t nirSteps) {
  driver::CompileRequest request{modelPath,   artifactDir, plan,    analyzeOptions,
                                 planOptions, nirDt,       nirSteps};
  driver::CompileResult result;
  {
    py::gil_scoped_release release;
    result = driver::compileModel(request);
  }
  if (!result.succeeded) {
    std::string message;
    // The lines without the tools' `error: ` and the temporary file's name: the caller's
    // model is the subject.
    for (std::string line : result.diagnostics) {
      if (line.rfind("error: ", 0) == 0)
        line = line.substr(7);
      if (line.rfind(modelPath + ": ", 0) == 0)
        line = line.substr(modelPath.size() + 2);
      message += (message.empty() ? "" : "; ") + line;
    }
    throw runtime::Error(message.empty() ? "compilation failed" : message);
  }
  py::dict out;
  out["diagnostics"] = result.diagnostics;
  out["explanation_json"] = result.explanationJSON;
  out["explanation_text"] = result.explanationText;
  return out;
}

} // namespace

void snn::python::bindCompiler(py::module_ &m, py::exception<runtime::Error> &) {
  m.def("compile", &compile, py::arg("model_path"), py::arg("artifact_dir") = "",
        py::arg("plan") = false, py::arg("analyze_options") = "", py::arg("plan_options") = "",
        py::arg("nir_dt") = py::none(), py::arg("nir_steps") = 0,
        "Compile an ONNX or NIR model (snn-compile in process). With plan=True the analyze "
        "and plan passes run with the given pass options; nir_dt and nir_steps are a NIR "
        "file's --nir-dt and --nir-steps. Returns the diagnostics and, with a plan, the "
        "explanation as JSON and text. Raises SpikeMeshError on any error.");
  m.def("user_device_profile_path", &schema::userDeviceProfilePath,
        "This user's device profile file (empty when SPIKEMESH_DEVICE_PROFILE is 'none').");
  m.def(
      "user_device_profile",
      [] {
        schema::UserDeviceProfile user = schema::userDeviceProfile();
        return py::make_tuple(user.path, user.warning);
      },
      "(path, warning): the per-user profile a plan uses when given none, or an empty path "
      "and why the plan is uncalibrated.");
  m.attr("snn_run_path") = SNN_RUN_PATH;
  // The mesh axis names, from the one C++ definition (MeshAxes.h).
  py::tuple axes(std::size(schema::meshaxis::kTopologyOrder));
  for (size_t i = 0; i < axes.size(); ++i)
    axes[i] = schema::meshaxis::kTopologyOrder[i];
  m.attr("topology_order") = axes;
}
