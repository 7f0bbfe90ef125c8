//===- TensorIO.cpp - .npy files as at::Tensor ----------------------------===//

#include "snn/Runtime/Support/TensorIO.h"
#include "snn/Runtime/Support/Npy.h"

#include <ATen/ops/from_blob.h>

#include <sstream>

namespace snn::runtime {

at::Tensor readTensorNpy(const std::string &path) {
  // The tensor adopts the vector's buffer instead of copying it.
  auto *array = new NpyArray(readNpy(path));
  float *data = array->data.data();
  return at::from_blob(
      data, array->shape, [array](void *) { delete array; },
      at::TensorOptions().dtype(at::kFloat));
}

void writeTensorNpy(const std::string &path, const at::Tensor &tensor) {
  at::Tensor dense = tensor.to(at::kFloat).contiguous();
  std::vector<int64_t> shape(dense.sizes().begin(), dense.sizes().end());
  writeNpy(path, shape, dense.data_ptr<float>());
}

std::string formatShape(at::IntArrayRef shape) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      out << ", ";
    if (shape[i] < 0)
      out << '?';
    else
      out << shape[i];
  }
  out << ']';
  return out.str();
}

} // namespace snn::runtime
