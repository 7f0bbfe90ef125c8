//===- RandomState.h - ATen's default CPU generator -------------*- C++ -*-===//
//
// Dropout draws from ATen's default CPU generator, as torch.dropout does in
// the reference trainer. Seeding it like torch.manual_seed and saving and
// restoring its state is what makes runs repeatable and resumable.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_RANDOMSTATE_H
#define SNN_RUNTIME_EXECUTION_RANDOMSTATE_H

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace snn::runtime {

/// torch.manual_seed(seed) for the CPU generator.
void seedCpuGenerator(uint64_t seed);

/// The generator's full state (a uint8 tensor, torch.get_rng_state()).
at::Tensor cpuGeneratorState();

/// torch.set_rng_state(state); throws Error for a malformed state.
void setCpuGeneratorState(const at::Tensor &state);

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_RANDOMSTATE_H
