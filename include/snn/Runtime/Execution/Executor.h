//===- Executor.h - Runs a program's op list ---------------------*- C++ -*-===//
//
// The executor turns a Graph into a flat list of steps (kernel + value slots)
// once, then runs it. Intermediate values are released after their last use
// so peak memory stays near the largest few activations.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_EXECUTOR_H
#define SNN_RUNTIME_EXECUTION_EXECUTOR_H

#include "snn/Runtime/Execution/Graph.h"
#include "snn/Runtime/Execution/OpRegistry.h"
#include "snn/Runtime/Execution/ParameterStore.h"

#include <map>
#include <string>
#include <vector>

namespace snn::runtime {

/// Sees every step of a run (fsdp gathers a step's parameters before it and
/// frees them after their last use). Steps are numbered as in
/// Executor::parameterUse().
class ExecutionObserver {
public:
  virtual ~ExecutionObserver() = default;
  virtual void beforeStep(size_t step) = 0;
  /// `output`: the step's result (autograd hooks may be attached to it).
  virtual void afterStep(size_t step, const at::Tensor &output) = 0;
};

class Executor {
public:
  /// Builds the op list. Throws Error naming the node for an unknown op_type,
  /// a wrong number of inputs or outputs, or an input used before it is
  /// defined. With `parameters`, every initializer the store holds is bound
  /// to the store's tensor itself (shared, not copied), so in-place updates
  /// of the store are seen by later runs; other initializers are constants.
  /// An empty `inputName` / `outputName`: the program has no graph input /
  /// output (a pipeline stage that receives / sends its boundary values).
  Executor(const Graph &graph, const std::string &inputName,
           const std::string &outputName,
           const ParameterStore *parameters = nullptr,
           const OpRegistry &registry = OpRegistry::builtin());

  /// Runs the program; ATen failures are rethrown as Error naming the node.
  /// `training` selects BatchNorm/Dropout training semantics (RunContext).
  /// The caller picks the autograd mode: `infer` wraps this in
  /// c10::InferenceMode; training runs it with grad mode on, and autograd
  /// keeps what backward needs even after the executor releases a slot.
  /// `dataParallel` (training only): this rank's data-parallel setting.
  /// `observer` (may be null) sees every step. `mesh` (training and
  /// inference; may be null): the device mesh of a partitioned program's
  /// collectives.
  at::Tensor run(const at::Tensor &input, bool training = false,
                 const DataParallelContext *dataParallel = nullptr,
                 ExecutionObserver *observer = nullptr,
                 const MeshContext *mesh = nullptr) const;
  /// The same with the whole context given (a pipeline stage's boundary, the
  /// split backward's weight-gradient queue). `input` is ignored without a
  /// graph input; the result is undefined without a graph output.
  at::Tensor run(const at::Tensor &input, const RunContext &context,
                 ExecutionObserver *observer = nullptr) const;

  /// Runs the program for training with recomputation (snn-run train --recompute; grad
  /// mode on). The steps run in segments that end where a single value is live and it
  /// holds spikes, or, once a neuron has run in the segment, any value (a residual sum);
  /// a segment's forward records no graph and keeps only its input (spikes as bits, small
  /// counts as bytes), and runs again, recording its graph, when the backward reaches it
  /// (SegmentRecomputation.cpp). The gradients are run()'s, bit for bit: the same kernels
  /// run on the same values, Dropout replays its draws and BatchNorm updates its running
  /// statistics once. Throws Error for a program without a graph input and output.
  at::Tensor runRecomputingSegments(const at::Tensor &input, const RunContext &context) const;

  /// A step after which the only value still needed is the step's own output (outside a
  /// spiking block): where a recomputed segment may end.
  struct SegmentCut {
    size_t step = 0;
    int slot = -1;
    /// A neuron runs after the previous cut, up to this one.
    bool afterNeuron = false;
  };
  const std::vector<SegmentCut> &segmentCuts() const { return cuts; }

  size_t numSteps() const { return steps.size(); }
  /// Per step, the names of the ParameterStore entries it reads (in operand
  /// order; empty without a store), directly or through a value that may be
  /// a view of one (OpDef::mayViewInput).
  const std::vector<std::vector<std::string>> &parameterUse() const {
    return stepParameters;
  }

private:
  struct Step {
    std::string description; // "node 'x' (op)"
    Kernel kernel;
    std::vector<int> inputs; // slot per input, -1 for an absent optional one
    int output = -1;
    std::vector<int> release; // slots whose last use is this step
    bool neuron = false;      // a neuron op (segments end after one)
  };

  /// A spiking block (SpikingBlockFusion.h) over steps [first, first +
  /// count): its kernel, its input slots and its output slot.
  struct Block {
    size_t first = 0, count = 0;
    Kernel kernel;
    std::vector<int> inputs;
    int output = -1;
  };

  int slotOf(const std::string &value, const Node &user) const;
  /// Per slot, the last step that reads it (-1: none).
  std::vector<int> lastReads() const;
  void planReleases();
  void planCuts();
  /// Runs steps [first, end) over `values` (a spiking block starting inside the range
  /// ends inside it).
  void runSteps(size_t first, size_t end, std::vector<at::Tensor> &values,
                const RunContext &context, ExecutionObserver *observer) const;
  void planBlocks(const Graph &graph, const std::string &outputName);
  /// Runs the block starting at `index` if there is one and it applies;
  /// returns the number of steps it covered (0: run the step itself).
  size_t runBlockAt(size_t index, std::vector<at::Tensor> &values,
                    const RunContext &context) const;

  std::string file;
  std::map<std::string, int> slots;
  std::vector<at::Tensor> constants; // initializer values, by slot
  int numSlots = 0;
  int inputSlot = -1;
  int outputSlot = -1;
  std::vector<Step> steps;
  std::vector<Block> blocks;
  std::vector<int> blockAtStep; // index into blocks, or -1
  std::vector<SegmentCut> cuts;
  std::vector<std::vector<std::string>> stepParameters;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_EXECUTOR_H
