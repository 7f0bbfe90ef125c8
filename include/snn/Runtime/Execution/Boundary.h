//===- Boundary.h - Program input and output against the manifest -*- C++ -*-===//
#ifndef SNN_RUNTIME_EXECUTION_BOUNDARY_H
#define SNN_RUNTIME_EXECUTION_BOUNDARY_H

#include "snn/Runtime/Execution/Manifest.h"

#include <ATen/core/Tensor.h>
#include <string>

namespace snn::runtime {

/// Checks `input` against the manifest's input spec and returns the tensor the
/// program takes. With `repeatTime` > 0, `input` is a static [N, ...] batch
/// that is repeated T times (direct encoding) first. Throws Error naming
/// `name` (the input file) and the expected and actual shapes.
at::Tensor prepareInput(const at::Tensor &input, const TensorSpec &spec,
                        int64_t repeatTime, const std::string &name);

/// Checks the program's result against the manifest's output spec.
void checkOutput(const at::Tensor &output, const TensorSpec &spec);

/// True if `shape` has the rank of `expected` and equals it in every static
/// (non -1) dim of the manifest's shape.
bool matchesSpecShape(at::IntArrayRef shape, at::IntArrayRef expected);

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_BOUNDARY_H
