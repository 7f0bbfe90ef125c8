//===- CostModel.h - FLOPs, bytes and communication of a model ----*- C++ -*-===//
//
// Counting conventions (hand-checkable; the unit tests count them by hand):
//
//   forward FLOPs per output element (a multiply-add is 2 FLOPs)
//     linear        2 * in            (+1 with bias)
//     conv2d        2 * (C/groups) * kh * kw   (+1 with bias)
//     batch_norm    6   (2 for the batch statistics, 4 to normalise and apply the affine)
//     max_pool2d    kh * kw comparisons;  avg_pool2d  kh * kw
//     adaptive_avg_pool2d   (input elements / output elements)
//     flatten 0; dropout 1; add 1; mul 1
//     mean_time     T  (sum over the time steps and divide)
//     if_node 4 (charge 1, fire 1, reset 2); lif_node 7 and plif_node 7 (charge 4)
//   backward FLOPs = 2 x forward (gradients of the input and of the weights).
//
//   activation bytes kept for backward = the op's output (all T steps), except
//     flatten 0 (a view of its input) and neurons 2 x output (autograd keeps the spikes and
//     the membrane potential H of every step for the surrogate gradient).
//
// Every tensor is float32 (4 bytes). Parameters count trainable tensors; BatchNorm
// running statistics are buffers: replicated everywhere, no gradient, no optimizer state.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_PLANNER_COSTMODEL_H
#define SNN_PLANNER_COSTMODEL_H

#include "snn/Planner/ModelInfo.h"

#include <cstdint>
#include <vector>

namespace snn::planner {

constexpr int64_t kBytesPerElement = 4;

/// Machine constants the time estimates use. Only ratios matter for the decision:
/// compute time against communication time. Defaults describe one accelerator-class
/// rank on a 10 GB/s link; override them for another machine.
struct Hardware {
  double flopsPerSecond = 1.0e12;
  double linkBytesPerSecond = 1.0e10;
  double latencySeconds = 2.0e-5;  ///< per ring step of a collective, per send/recv
  int optimizerStatesPerParam = 2; ///< Adam: exp_avg and exp_avg_sq
};

/// Cost of one op at a given batch size (global: the whole batch on one device).
struct OpCost {
  double forwardFlops = 0;
  double backwardFlops = 0;
  int64_t paramBytes = 0;
  int64_t bufferBytes = 0;
  int64_t outputBytes = 0;
  int64_t activationBytes = 0; ///< kept for backward
};

OpCost opCost(const ModelInfo &model, int opIndex, int64_t batch);

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

/// Bytes one rank sends in a ring collective of a `bytes`-sized tensor over `ranks`.
int64_t allReduceBytes(int64_t bytes, int64_t ranks);     ///< 2 (r-1)/r * bytes
int64_t allGatherBytes(int64_t bytes, int64_t ranks);     ///< (r-1)/r * bytes (full size)
int64_t reduceScatterBytes(int64_t bytes, int64_t ranks); ///< (r-1)/r * bytes (full size)

/// What a mode communicates per training step and rank.
struct Communication {
  int64_t bytes = 0;
  int64_t collectives = 0;
  int64_t latencySteps = 0; ///< ring steps + point-to-point messages (each pays latency)

  Communication &operator+=(const Communication &other) {
    bytes += other.bytes;
    collectives += other.collectives;
    latencySteps += other.latencySteps;
    return *this;
  }
  double seconds(const Hardware &hw) const {
    return double(bytes) / hw.linkBytesPerSecond + double(latencySteps) * hw.latencySeconds;
  }
};

Communication allReduce(int64_t bytes, int64_t ranks);
Communication allGather(int64_t bytes, int64_t ranks);
Communication reduceScatter(int64_t bytes, int64_t ranks);

/// Data parallel (also ZeRO-1: its reduce-scatter of gradients plus all-gather of
/// updated parameters moves what one all-reduce moves): all-reduce of the gradients.
Communication dataParallelCommunication(const ModelCost &cost, int64_t dp);
/// FSDP: all-gather of every layer's parameters in forward and again in backward, and a
/// reduce-scatter of its gradients; one collective per parameter-holding op each.
Communication fsdpCommunication(const ModelCost &cost, int64_t dp);

} // namespace snn::planner

#endif
