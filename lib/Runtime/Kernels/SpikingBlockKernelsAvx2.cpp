//===- SpikingBlockKernelsAvx2.cpp - Block loops for AVX2 -----------------===//
//
// The block loops for AVX2 CPUs, chosen at run time with the neuron kernels'
// ISA. The forward step is also built for FMA, for the explicit fused
// multiply-adds of the BatchNorm affine (-ffp-contract=off keeps every other
// operation rounded alone); the other loops are not: GCC 12 stops
// vectorising the backward step under "avx2,fma" ("no vectype").
//
//===----------------------------------------------------------------------===//

#define SNN_BLOCK_ISA avx2
#define SNN_BLOCK_TARGET __attribute__((target("avx2")))
#define SNN_BLOCK_FMA_TARGET __attribute__((target("avx2,fma")))
#include "SpikingBlockKernelsImpl.h"
