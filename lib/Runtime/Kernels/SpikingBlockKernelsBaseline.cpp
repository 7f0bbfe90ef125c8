//===- SpikingBlockKernelsBaseline.cpp - Block loops, baseline ISA --------===//

#define SNN_BLOCK_ISA baseline
#include "SpikingBlockKernelsImpl.h"
