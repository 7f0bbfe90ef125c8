//===- SpikingBlockFusion.h - Runs of nodes run as one block -----*- C++ -*-===//
//
// The executor runs [batch_norm ->] neuron [-> max_pool2d] (at least two of
// them, each intermediate value read by the next node only) as one spiking
// block (SpikingBlockKernels.h): the same values, fewer passes over memory.
// The program is not changed: a block that does not apply to a run (a
// synchronised BatchNorm, a recomputed stage, an observer watching every
// node, an input the kernels do not take) runs node by node as before.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_SPIKINGBLOCKFUSION_H
#define SNN_RUNTIME_EXECUTION_SPIKINGBLOCKFUSION_H

#include "snn/Runtime/Execution/Graph.h"
#include "snn/Runtime/Execution/OpRegistry.h"

#include <cstdint>
#include <string>
#include <vector>

namespace snn::runtime {

/// One run of nodes [first, first + count) and the kernel that computes the
/// last one's output from `inputs` (value names: the block's input, then the
/// BatchNorm's four operands if any, then PLIF's w if any). The kernel
/// returns an undefined tensor when the block does not apply to a run.
struct SpikingBlockPlan {
  size_t first = 0, count = 0;
  std::vector<std::string> inputs;
  std::string output;
  Kernel kernel;
};

/// The blocks of `graph`, in node order. `outputName`: the graph output,
/// which no block hides inside itself.
std::vector<SpikingBlockPlan> planSpikingBlocks(const Graph &graph,
                                                const std::string &outputName);

/// Process-wide switch (snn-run --no-fusion), which also turns off the
/// one-step conv2d of TimeInvariance.h; on by default.
void setSpikingBlocksEnabled(bool enabled);
bool spikingBlocksEnabled();

/// Runs so far: blocks run fused, and runs of a planned block that fell back
/// to its nodes.
struct SpikingBlockCounts {
  int64_t fused = 0, unfused = 0;
  /// Per-step layer runs that computed one step of a time-invariant input
  /// (TimeInvariance.h).
  int64_t oneStepLayers = 0;
  /// Block backwards whose BatchNorm backward ran in the BPTT pass.
  int64_t fusedNormBackwards = 0;
  bool any() const { return fused + unfused + oneStepLayers > 0; }
};
SpikingBlockCounts spikingBlockCounts();

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_SPIKINGBLOCKFUSION_H
