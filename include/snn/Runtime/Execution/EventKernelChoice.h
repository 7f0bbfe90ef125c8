//===- EventKernelChoice.h - Event-driven or dense, measured per layer -*- C++ -*-===//
//
// An event-driven kernel (a Linear or conv2d that sums the weights of its
// input's ones) pays a fixed cost plus a cost in proportion to the share of
// ones; the dense kernel's cost does not depend on it. Where the two cross
// depends on the layer's shape and on this machine's GEMM, so with
// `snn-run --spike-linear-density auto` / `--spike-conv-density auto` the
// first spike input of each layer shape times both kernels on that very
// input (and the event kernel on no spikes, its fixed cost) and remembers the
// crossover density: later calls take the event kernel up to it.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_EVENTKERNELCHOICE_H
#define SNN_RUNTIME_EXECUTION_EVENTKERNELCHOICE_H

#include "snn/Runtime/Kernels/SpikeConvKernels.h"

#include <ATen/core/Tensor.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace snn::runtime {

/// What the flags' `auto` stands for: a density below every real one.
constexpr double kMeasuredDensity = -1.0;

/// One layer shape's measurement (seconds, best of a few runs).
struct KernelCrossover {
  double denseSeconds = 0, fixedSeconds = 0, eventSeconds = 0;
  double density = 0;   ///< share of ones of the input the event kernel was timed on
  double threshold = 0; ///< crossoverDensity of the above
};

/// The density up to which the event kernel is the faster, in [0, 1], when
/// its time is fixedSeconds + (eventSeconds - fixedSeconds) * d / density and
/// the dense kernel's is denseSeconds: 0 when even no spikes lose, 1 when the
/// event kernel wins at every density.
double crossoverDensity(double denseSeconds, double fixedSeconds, double eventSeconds,
                        double density);

/// The crossover of layer shape `key`: `measure` fills the times and density
/// the first time the key is seen (threshold is then computed), later calls
/// return the remembered one. Thread-safe.
double measuredThreshold(const std::string &key,
                         const std::function<KernelCrossover()> &measure);

/// The remembered crossover of `key`, if measured.
std::optional<double> rememberedThreshold(const std::string &key);

/// --spike-linear-density auto: the crossover of this Linear shape, x [M, in]
/// (forward, plus the weight gradient when autograd records the call), timed
/// on x the first time; 0 (dense) while x is not spikes and the shape has no
/// measurement yet.
double linearEventThreshold(const at::Tensor &x, const at::Tensor &weight,
                            const at::Tensor &bias);

/// --spike-conv-density auto: the same for a conv2d of x [B, C, H, W]
/// (`training`: forward plus the weight gradient).
double convEventThreshold(const at::Tensor &x, const at::Tensor &weight, const at::Tensor &bias,
                          const SpikeConvGeometry &geometry, bool training);

/// The shapes measured so far with their crossovers, in the order measured.
std::vector<std::pair<std::string, KernelCrossover>> measuredCrossovers();

/// The best time of `repeats` runs of `run`, after one untimed.
double bestSeconds(const std::function<void()> &run, int repeats = 3);

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_EVENTKERNELCHOICE_H
