//===- NeuronReference.h - Independent neuron implementations --*- C++ -*-===//
//
// Two references for the fused kernels: a plain scalar loop written straight
// from docs/semantics.md, and the per-step ATen op chain that the PyTorch
// reference (SpikingJelly style) executes.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_TEST_UNIT_NEURONREFERENCE_H
#define SNN_TEST_UNIT_NEURONREFERENCE_H

#include "snn/Runtime/Kernels/NeuronKernels.h"

#include <string>
#include <vector>

namespace snn::test {

/// Scalar loop; returns spikes [T*M] and fills `h` [T*M] if not null.
std::vector<float> scalarNeuron(const runtime::NeuronConfig &config, float k,
                                const std::vector<float> &x, int64_t steps,
                                int64_t neurons, std::vector<float> *h);

/// Per-step ATen ops, as eager PyTorch computes them. `w` is PLIF's weight.
/// Returns the spikes; stores the stacked pre-fire potentials in `h` if given.
at::Tensor atenNeuron(const at::Tensor &x, const runtime::NeuronConfig &config,
                      const at::Tensor &w, at::Tensor *h = nullptr);

/// Every neuron kind x decay_input x hard/soft reset, with non-default
/// thresholds and taus.
std::vector<runtime::NeuronConfig> allNeuronConfigs();

std::string describe(const runtime::NeuronConfig &config);

} // namespace snn::test

#endif // SNN_TEST_UNIT_NEURONREFERENCE_H
