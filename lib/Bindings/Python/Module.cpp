//===- Module.cpp - The spikemesh._spikemesh extension module -------------===//
//
// The native half of the `spikemesh` Python package: the compiler (CompilerBindings.cpp) and
// the runtime (RuntimeBindings.cpp) in the user's process, over the same LibTorch as the
// user's `torch`, so tensors and the autograd engine are shared. Every user-facing failure
// (snn::runtime::Error, snn::dist::DistributedError, a compile diagnostic) reaches Python as `spikemesh.SpikeMeshError`,
// a ValueError with the tools' one-line message; nothing brings the interpreter down.
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "snn/Runtime/Distributed/Error.h"
#include "snn/Runtime/Support/Error.h"

namespace py = pybind11;

PYBIND11_MODULE(_spikemesh, m) {
  m.doc() = "SpikeMesh's compiler and runtime, in process (used by the spikemesh package)";
  static py::exception<snn::runtime::Error> &error =
      py::register_exception<snn::runtime::Error>(m, "SpikeMeshError", PyExc_ValueError);
  // A lost peer or a failed rendezvous is the same kind of user-facing failure.
  py::register_exception_translator([](std::exception_ptr raised) {
    try {
      if (raised)
        std::rethrow_exception(raised);
    } catch (const snn::dist::DistributedError &e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });
  snn::python::bindCompiler(m, error);
  snn::python::bindRuntime(m);
}
