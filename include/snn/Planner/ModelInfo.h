//===- ModelInfo.h - What the planner knows about a model ---------*- C++ -*-===//
//
// Plain structs the compiler fills from snn IR (the bridge in the plan pass) and unit
// tests fill by hand. No MLIR types: the cost model is testable and reusable alone.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_PLANNER_MODELINFO_H
#define SNN_PLANNER_MODELINFO_H

#include <cstdint>
#include <string>
#include <vector>

namespace snn::planner {

enum class OpKind {
  Linear,
  Conv2d,
  BatchNorm,
  MaxPool2d,
  AvgPool2d,
  AdaptiveAvgPool2d,
  Flatten,
  Reshape, ///< a per-step view of another shape (snn.reshape)
  Dropout,
  Add,
  Mul,
  MeanTime,
  IFNode,
  LIFNode,
  PLIFNode,
  Neuron,         ///< a neuron described by its parts (snn.neuron)
  /// a described neuron fed back its own output through a Linear (snn.recurrent_neuron):
  /// weightShape [F, F]; the steps run in order, so it is never split but on the batch
  RecurrentNeuron,
  ParallelNeuron, ///< PSN, MaskedPSN, SlidingPSN (snn.parallel_neuron): a [T, T] GEMM and a fire
  SpikingAttention,
  Other,
};

const char *opKindName(OpKind kind);
bool isNeuron(OpKind kind);

/// One op of the model, in program order. Shapes are full logical shapes with the batch
/// dimension set to -1 (the planner substitutes the batch size it plans for).
struct OpInfo {
  std::string name; ///< source module path, e.g. "conv_fc.0"; may be empty
  OpKind kind = OpKind::Other;
  /// Producers of the op's activation operands (indices into ModelInfo::ops); -1 is the
  /// model input. Parameters are not listed here.
  std::vector<int> inputs;
  std::vector<int64_t> outputShape;
  int batchDim = 1; ///< index of the batch dimension in outputShape
  /// linear: [out, in]; conv2d: [O, C/groups, kh, kw]; empty for other kinds.
  std::vector<int64_t> weightShape;
  bool hasBias = false;
  int64_t groups = 1;                ///< conv2d; spiking_attention: its heads
  std::vector<int64_t> window;       ///< pooling kernel (kh, kw)
  /// A per-step reshape that keeps dim 2 (the channels) as it is (a Spikformer's [C, 1, L]
  /// <-> [C, L] views): a conv's channel split passes through it.
  bool keepsChannels = false;
  int64_t paramElements = 0;         ///< trainable parameters first used by this op
  int64_t bufferElements = 0;        ///< non-trainable state (BatchNorm running statistics)
  int64_t largestParamElements = 0;  ///< the op's largest single parameter tensor
  /// Set by the analysis: the op is under the requested roots and may be split.
  bool tpCandidate = false;
};

struct ModelInfo {
  std::vector<int64_t> inputShape; ///< batch dimension -1
  int inputBatchDim = 1;
  int64_t timeSteps = 1;
  std::vector<OpInfo> ops;
  /// Ops whose result the model returns (the readout).
  std::vector<int> outputs;
};

/// Number of elements of `shape` with the batch dimension `batchDim` set to `batch`.
int64_t elementsAt(const std::vector<int64_t> &shape, int batchDim, int64_t batch);

/// Shape of the first activation operand of `op` (the model input for -1).
const std::vector<int64_t> &inputShapeOf(const ModelInfo &model, int opIndex);
int inputBatchDimOf(const ModelInfo &model, int opIndex);

/// Ops that read the result of `opIndex`.
std::vector<int> usersOf(const ModelInfo &model, int opIndex);

} // namespace snn::planner

#endif
