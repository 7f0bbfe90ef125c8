//===- NonFiniteValues.cpp - No checkpoint of NaN weights -----------------===//

#include "snn/Runtime/Checkpoint/NonFiniteValues.h"

#include <cstdint>
#include <cstring>

namespace snn::runtime {

namespace {

/// Whether any of `count` values, given as their bit patterns, has every
/// exponent bit set (NaN or infinity). A plain loop, not an ATen op: the
/// background writer calls it, and an ATen reduction there would start a
/// second OpenMP team competing with the training thread's.
template <typename Bits>
bool anyNonFinite(const void *data, int64_t count, Bits exponent) {
  const auto *bits = static_cast<const Bits *>(data);
  Bits found = 0;
  for (int64_t i = 0; i < count; ++i)
    found |= Bits((bits[i] & exponent) == exponent);
  return found != 0;
}

} // namespace

bool allFinite(const at::Tensor &tensor) {
  if (!tensor.defined() || tensor.numel() == 0)
    return true;
  at::Tensor dense = tensor.is_contiguous() ? tensor : tensor.contiguous();
  switch (dense.scalar_type()) {
  case at::kFloat:
    return !anyNonFinite<uint32_t>(dense.data_ptr(), dense.numel(), 0x7f800000u);
  case at::kDouble:
    return !anyNonFinite<uint64_t>(dense.data_ptr(), dense.numel(), 0x7ff0000000000000ull);
  default:
    return true; // integer tensors (step counts, generator state) are always finite
  }
}

std::string firstNonFiniteTensor(const CheckpointState &state) {
  for (const CheckpointTensor &entry : state.model)
    if (!allFinite(entry.value))
      return entry.kind + " '" + entry.name + "'";
  for (const CheckpointOptimizerEntry &entry : state.optimizerState)
    for (const auto &[name, tensor] : entry.tensors)
      if (!allFinite(tensor))
        return "optimizer state '" + name + "' of '" + entry.param + "'";
  return {};
}

std::string nonFiniteRefusal(const CheckpointState &state) {
  std::string bad = firstNonFiniteTensor(state);
  if (bad.empty())
    return {};
  return bad + " is not finite after step " + std::to_string(state.step) +
         ": no checkpoint of it is written";
}

} // namespace snn::runtime
