//===- Bindings.h - The parts of the extension module -----------*- C++ -*-===//
#ifndef SNN_BINDINGS_PYTHON_BINDINGS_H
#define SNN_BINDINGS_PYTHON_BINDINGS_H

#include <pybind11/pybind11.h>

#include "snn/Runtime/Support/Error.h"

namespace snn::python {

/// `compile(...)`: the compile pipeline in process (snn/Driver/Compile.h).
void bindCompiler(pybind11::module_ &m, pybind11::exception<runtime::Error> &error);
/// `Program`: one rank's program of an artifact over the caller's parameter tensors.
void bindRuntime(pybind11::module_ &m);

} // namespace snn::python

#endif // SNN_BINDINGS_PYTHON_BINDINGS_H
