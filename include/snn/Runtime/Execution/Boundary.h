//===- Boundary.h - Program input and output against the manifest -*- C++ -*-===//
#ifndef SNN_RUNTIME_EXECUTION_BOUNDARY_H
#define SNN_RUNTIME_EXECUTION_BOUNDARY_H

#include "snn/Runtime/Execution/Manifest.h"

#include <ATen/core/Tensor.h>
#include <string>

namespace snn::runtime {

/// Whether an input of `shape` is a static [N, ...] batch that prepareInput
/// repeats over T: `repeatTime` > 0 (--repeat-time), or an artifact whose model
/// repeats its input itself (TensorSpec::repeatedOverTime) and an input of one
/// dimension fewer than the program's [T, N, ...].
bool takesStaticInput(at::IntArrayRef shape, const TensorSpec &spec, int64_t repeatTime);

/// Checks `input` against the manifest's input spec and returns the tensor the
/// program takes. A static [N, ...] batch (takesStaticInput) is repeated over T
/// (direct encoding) first: `repeatTime` times, which must be the artifact's T
/// when that is static, or the artifact's T. Throws Error naming `name` (the
/// input file) and the expected and actual shapes.
at::Tensor prepareInput(const at::Tensor &input, const TensorSpec &spec,
                        int64_t repeatTime, const std::string &name);

/// Checks the program's result against the manifest's output spec.
void checkOutput(const at::Tensor &output, const TensorSpec &spec);

/// True if `shape` has the rank of `expected` and equals it in every static
/// (non -1) dim of the manifest's shape.
bool matchesSpecShape(at::IntArrayRef shape, at::IntArrayRef expected);

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_BOUNDARY_H
