//===- EventKernelDensity.h - The automatic event-kernel density -*- C++ -*-===//
#ifndef SNN_RUNTIME_KERNELS_EVENTKERNELDENSITY_H
#define SNN_RUNTIME_KERNELS_EVENTKERNELDENSITY_H

namespace snn::runtime {

/// The density limit that stands for `auto`, the default of
/// --spike-linear-density and --spike-conv-density: each layer shape takes the
/// event-driven kernels up to its crossover density on this machine
/// (Execution/EventKernelChoice.h). Below every real density.
constexpr double kMeasuredDensity = -1.0;

} // namespace snn::runtime

#endif // SNN_RUNTIME_KERNELS_EVENTKERNELDENSITY_H
