//===- NeuronGradReference.h - References for neuron BPTT -------*- C++ -*-===//
//
// Two ways to get surrogate gradients without the fused kernels:
// - the per-step ATen op chain of the PyTorch reference, differentiated by
//   LibTorch's autograd, with the surrogate as a straight-through term
//   (Heaviside forward, sg' backward) as SpikingJelly's surrogate Functions
//   do;
// - a smooth function whose exact gradient at a point equals the surrogate
//   gradient there, for central finite differences in float64.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_TEST_UNIT_NEURONGRADREFERENCE_H
#define SNN_TEST_UNIT_NEURONGRADREFERENCE_H

#include "snn/Runtime/Kernels/NeuronKernels.h"

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace snn::test {

/// Spikes of x [T, ...] from per-step ATen ops, differentiable w.r.t. `x`
/// and PLIF's `w` (0-dim, or shaped like `x` with one copy of the same value
/// per step and neuron, whose gradient is then each one's term of the 0-dim
/// w's). Forward values equal the Heaviside neuron exactly; backward uses the
/// config's surrogate and detach_reset.
at::Tensor atenSurrogateNeuron(const at::Tensor &x,
                               const runtime::NeuronConfig &config,
                               const at::Tensor &w);

/// The neuron linearised at (x0, w0): S_t = Heaviside_0 + P(u_t) - P(u0_t)
/// with P the surrogate's primitive (P' = sg') and the 0-subscripted values
/// frozen at (x0, w0). At (x0, w0) its value is the spiking neuron's and its
/// gradient is the surrogate BPTT gradient; it is smooth nearby, so finite
/// differences apply. With detach_reset the reset uses Heaviside_0.
class LinearisedNeuron {
public:
  LinearisedNeuron(const runtime::NeuronConfig &config,
                   const std::vector<double> &x0, double w0, int64_t steps,
                   int64_t neurons);

  /// sum_t,i g[t,i] * S[t,i] at (x, w).
  double loss(const std::vector<double> &x, double w,
              const std::vector<double> &g);

private:
  /// Runs the neuron and returns the loss (0 without `g`); with `record`,
  /// computes the frozen values instead of reading them.
  double run(const std::vector<double> &x, double w,
             const std::vector<double> *g, bool record);
  double charge(double v, double x, double k) const;

  runtime::NeuronConfig config;
  int64_t steps, neurons;
  std::vector<double> heaviside0, primitive0;
};

/// Every kind x decay_input x hard/soft reset x detach_reset x surrogate.
std::vector<runtime::NeuronConfig> allGradConfigs();

/// Each surrogate other than Sigmoid and ATan with non-default parameters, on
/// a LIF (decay_input, hard reset) and a PLIF (soft reset, detach_reset).
std::vector<runtime::NeuronConfig> surrogateGradConfigs();

std::string describeGrad(const runtime::NeuronConfig &config);

} // namespace snn::test

#endif // SNN_TEST_UNIT_NEURONGRADREFERENCE_H
