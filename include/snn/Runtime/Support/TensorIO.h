//===- TensorIO.h - .npy files as at::Tensor --------------------*- C++ -*-===//
#ifndef SNN_RUNTIME_SUPPORT_TENSORIO_H
#define SNN_RUNTIME_SUPPORT_TENSORIO_H

#include <ATen/core/Tensor.h>
#include <string>

namespace snn::runtime {

/// Reads a float32 .npy file into a CPU tensor without copying the data twice.
at::Tensor readTensorNpy(const std::string &path);

/// Writes a tensor as float32 .npy (atomically); other dtypes are converted.
void writeTensorNpy(const std::string &path, const at::Tensor &tensor);

/// Formats sizes as "[4, 2, 10]" for messages; a dynamic (-1) dim prints "?".
std::string formatShape(at::IntArrayRef shape);

} // namespace snn::runtime

#endif // SNN_RUNTIME_SUPPORT_TENSORIO_H
