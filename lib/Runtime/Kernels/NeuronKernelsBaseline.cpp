//===- NeuronKernelsBaseline.cpp - Neuron loops for the baseline ISA ------===//
//
// Also the only float64 build of the loops (finite-difference tests).
//
//===----------------------------------------------------------------------===//

#define SNN_NEURON_ISA baseline
#include "NeuronKernelsImpl.h"

namespace snn::runtime::baseline {

int64_t forward(const NeuronConfig &config, double k, const double *x,
                double *spikes, double *h, int64_t steps, int64_t neuronsPerStep) {
  return forwardRaw<double>(config, k, x, spikes, h, steps, neuronsPerStep);
}

double backward(const NeuronConfig &config, double k, const double *gradSpikes,
                const double *h, const double *x, double *gradX, int64_t steps,
                int64_t neuronsPerStep) {
  return backwardRaw<double>(config, k, gradSpikes, h, x, gradX, steps,
                             neuronsPerStep);
}

} // namespace snn::runtime::baseline
