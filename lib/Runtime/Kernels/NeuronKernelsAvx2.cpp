//===- NeuronKernelsAvx2.cpp - Neuron loops for AVX2 ----------------------===//
//
// The loops compiled for AVX2 (a target attribute, see NeuronKernelsImpl.h)
// and called only after a run-time CPU check: 8 floats per vector instead of
// SSE2's 4, which halves the time of the compute-bound Sigmoid-surrogate
// backward. No FMA: each operation must round as in the reference.
//
//===----------------------------------------------------------------------===//

#define SNN_NEURON_ISA avx2
#define SNN_NEURON_TARGET __attribute__((target("avx2")))
#include "NeuronKernelsImpl.h"
