//===- NeuronKernelsIsa.h - Per-ISA entry points of the neurons -*- C++ -*-===//
//
// Private to the runtime: the raw kernels compiled for each instruction set
// (NeuronKernelsImpl.h). NeuronKernels.cpp dispatches between them.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_NEURONKERNELSISA_H
#define SNN_RUNTIME_NEURONKERNELSISA_H

#include "snn/Runtime/Kernels/NeuronKernels.h"

#include <cstdint>

namespace snn::runtime {

/// The target's baseline ISA; float and double.
namespace baseline {
int64_t forward(const NeuronConfig &config, float k, const float *x, float *spikes,
             float *h, int64_t steps, int64_t neuronsPerStep);
int64_t forward(const NeuronConfig &config, double k, const double *x,
             double *spikes, double *h, int64_t steps, int64_t neuronsPerStep);
double backward(const NeuronConfig &config, float k, const float *gradSpikes,
                const float *h, const float *x, float *gradX, int64_t steps,
                int64_t neuronsPerStep);
double backward(const NeuronConfig &config, double k, const double *gradSpikes,
                const double *h, const double *x, double *gradX, int64_t steps,
                int64_t neuronsPerStep);
} // namespace baseline

/// x86-64 with AVX2 (built only where the compiler targets x86-64); float
/// only: float64 serves the gradient checks, not speed.
namespace avx2 {
int64_t forward(const NeuronConfig &config, float k, const float *x, float *spikes,
             float *h, int64_t steps, int64_t neuronsPerStep);
double backward(const NeuronConfig &config, float k, const float *gradSpikes,
                const float *h, const float *x, float *gradX, int64_t steps,
                int64_t neuronsPerStep);
} // namespace avx2

} // namespace snn::runtime

#endif // SNN_RUNTIME_NEURONKERNELSISA_H
