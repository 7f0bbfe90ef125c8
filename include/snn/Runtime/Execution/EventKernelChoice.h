//===- EventKernelChoice.h - Event-driven or dense, measured per layer -*- C++ -*-===//
//
// An event-driven kernel (a Linear or conv2d that sums the weights of its
// input's ones) pays a fixed cost plus a cost in proportion to the share of
// ones; the dense kernel's cost does not depend on it. Where the two cross
// depends on the layer's shape and on this machine, so under the default
// `--spike-linear-density auto` / `--spike-conv-density auto` each layer shape
// has a crossover density, timed once per machine on the first spike input
// that shape meets (KernelCrossoverFile.h keeps it for later processes), and
// every call compares its input's density with it: a layer whose firing
// drops below its crossover switches to the event kernel on that call, and
// back when it rises.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_EVENTKERNELCHOICE_H
#define SNN_RUNTIME_EXECUTION_EVENTKERNELCHOICE_H

#include "snn/Runtime/Execution/KernelCrossoverFile.h"
#include "snn/Runtime/Kernels/EventKernelDensity.h"
#include "snn/Runtime/Kernels/SpikeConvKernels.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace snn::runtime {

/// One layer shape under the automatic choice: its crossover, where that came
/// from, and the calls it decided.
struct EventKernelLayer {
  std::string key; ///< "linear [M, in] -> out", "conv2d [B, C, H, W] -> [O, C, kH, kW] ..."
  KernelCrossover crossover;
  bool fromFile = false; ///< read from the crossover file, not timed by this process
  int64_t eventCalls = 0, denseCalls = 0;
  double densitySum = 0; ///< over all the calls

  double meanDensity() const {
    int64_t calls = eventCalls + denseCalls;
    return calls > 0 ? densitySum / double(calls) : 0.0;
  }
};

/// The crossover of layer shape `key`: from this process's memory, else from
/// the crossover file (userKernelCrossoversPath, set by useKernelCrossoversFile),
/// else `measure`'s (which fills the times and the density), written to the
/// file. Thread-safe: one measurement runs at a time.
double measuredThreshold(const std::string &key,
                         const std::function<KernelCrossover()> &measure);

/// The remembered crossover of `key`, if this process has one.
std::optional<double> rememberedThreshold(const std::string &key);

/// The file measuredThreshold keeps crossovers in ("" keeps them in this
/// process only); by default userKernelCrossoversPath(). Forgets what this
/// process remembers, so later calls read the new file.
void useKernelCrossoversFile(const std::string &path);

/// Which kernel a call under the automatic choice takes.
enum class EventKernelUse {
  NotSpikes, ///< the input holds values other than +0 and 1: dense, not counted
  Dense,     ///< spikes, denser than the shape's crossover
  Event,     ///< spikes at most the crossover dense
};

/// Under --spike-linear-density auto: the kernel of this Linear call, x [M, in];
/// a call on spikes is counted under its shape. `training` is the run's mode,
/// not whether autograd records this call, so that a recomputed forward takes
/// the kernel its replay takes: a training shape's crossover times the forward
/// plus the weight gradient, and is another shape than the same layer's in
/// inference.
EventKernelUse linearEventKernelUse(const at::Tensor &x, const at::Tensor &weight,
                                    const at::Tensor &bias, bool training);

/// The same for a conv2d of x [B, C, H, W].
EventKernelUse convEventKernelUse(const at::Tensor &x, const at::Tensor &weight,
                                  const at::Tensor &bias, const SpikeConvGeometry &geometry,
                                  bool training);

/// The layer shapes with a crossover so far, in the order first met.
std::vector<EventKernelLayer> eventKernelLayers();

/// The best time of `repeats` runs of `run`, after one untimed.
double bestSeconds(const std::function<void()> &run, int repeats = 3);

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_EVENTKERNELCHOICE_H
