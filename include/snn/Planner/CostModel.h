//===- CostModel.h - FLOPs, bytes and time of a model's ops -------*- C++ -*-===//
//
// Counting conventions (hand-checkable; the unit tests count them by hand):
//
//   forward FLOPs per output element (a multiply-add is 2 FLOPs)
//     linear        2 * in            (+1 with bias)
//     conv2d        2 * (C/groups) * kh * kw   (+1 with bias)
//     batch_norm    6   (2 for the batch statistics, 4 to normalise and apply the affine)
//     max_pool2d    kh * kw comparisons;  avg_pool2d  kh * kw
//     adaptive_avg_pool2d   (input elements / output elements)
//     flatten 0; reshape 0; dropout 1; add 1; mul 1
//     mean_time     T  (sum over the time steps and divide)
//     if_node 4 (charge 1, fire 1, reset 2); lif_node 7 and plif_node 7 (charge 4)
//     spiking_attention   4 * D  (D = C / heads: (v k^T) q is 4 D^2 L FLOPs for D L outputs)
//     other ops (reduce_mean, ...) 1
//   backward FLOPs = 2 x forward (gradients of the input and of the weights).
//
//   activation bytes kept for backward = what the runtime's autograd keeps of the op, all T
//     steps (docs/planner.md): e.g. linear its input, a neuron its potentials H, flatten and
//     reshape nothing (views), an average pool its input.
//
// Every tensor is float32 (4 bytes). Parameters count trainable tensors; BatchNorm
// running statistics are buffers: replicated everywhere, no gradient, no optimizer state.
//
// What a mode communicates is in Communication.h, the machine that prices both in
// Calibration.h.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_PLANNER_COSTMODEL_H
#define SNN_PLANNER_COSTMODEL_H

#include "snn/Planner/Calibration.h"
#include "snn/Planner/ModelInfo.h"

#include <cstdint>
#include <utility>

namespace snn::planner {

constexpr int64_t kBytesPerElement = 4;

/// Cost of one op at a given batch size (global: the whole batch on one device).
struct OpCost {
  double forwardFlops = 0;
  double backwardFlops = 0;
  int64_t paramBytes = 0;
  int64_t bufferBytes = 0;
  int64_t outputBytes = 0;
  int64_t inputBytes = 0; ///< its activation operands, as the gradient it returns
  /// Kept from the forward for the backward, as the runtime keeps it (docs/planner.md):
  /// when the op runs node by node, and when it runs inside a fused spiking block.
  int64_t activationBytes = 0;
  int64_t fusedActivationBytes = 0;
};

OpCost opCost(const ModelInfo &model, int opIndex, int64_t batch);

/// The runtime's spiking blocks (its planSpikingBlocks): a 5-D batch_norm whose output only
/// a neuron reads, that neuron, and a max_pool2d that alone reads the neuron's spikes (two of
/// the three suffice when the neuron is one of them) run as one kernel. The index of the
/// first op of the block `opIndex` belongs to, or -1.
int spikingBlockStart(const ModelInfo &model, int opIndex);
/// Whether op `opIndex`'s output is spikes: a neuron's, or a max pool, flatten or reshape of
/// them.
bool producesSpikes(const ModelInfo &model, int opIndex);

/// Sums over the model at one batch size.
struct ModelCost {
  double forwardFlops = 0;
  double backwardFlops = 0;
  int64_t paramBytes = 0;
  int64_t bufferBytes = 0;
  int64_t activationBytes = 0;
  int64_t largestOpParamBytes = 0;
  int64_t paramOps = 0; ///< ops holding trainable parameters (FSDP gathers each)
};

ModelCost modelCost(const ModelInfo &model, int64_t batch);

/// The work of op `opIndex` at `batch` in its kind's unit (docs/planner.md): forward FLOPs
/// for linear and conv2d, input elements for neurons, BatchNorm and pooling, output elements
/// for the rest. `scale` is the rank's share (tensor parallelism).
std::pair<WorkKind, double> opWork(const ModelInfo &model, int opIndex, int64_t batch);
/// Seconds of one training call (forward and backward) of the op: the calibration's curve,
/// else its FLOPs over hw.flopsPerSecond.
double opTrainingSeconds(const ModelInfo &model, int opIndex, int64_t batch, double scale,
                         const Hardware &hw);

} // namespace snn::planner

#endif
