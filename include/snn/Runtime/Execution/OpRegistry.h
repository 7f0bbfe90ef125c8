//===- OpRegistry.h - op_type -> kernel builder ------------------*- C++ -*-===//
//
// Each op_type of the artifact maps to a builder that reads the node's
// attributes once, when the program is built, and returns the kernel the
// executor calls on every run. Registration is explicit (no static
// initialisers) because the runtime is a static library.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_OPREGISTRY_H
#define SNN_RUNTIME_EXECUTION_OPREGISTRY_H

#include "snn/Runtime/Execution/Graph.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace snn::runtime {

struct DataParallelContext;
class FiringCounts;
class MeshContext;
struct StageBoundary;
class WeightGradQueue;

/// What a kernel may depend on besides its inputs, fixed for one run.
struct RunContext {
  /// Training semantics: BatchNorm normalises with batch statistics and
  /// updates its running statistics, Dropout is active. Whether autograd
  /// records a graph is decided by the caller's grad mode, not by this flag.
  bool training = false;
  /// Training again over a forward already run (a recomputed pipeline
  /// stage): BatchNorm leaves its running statistics as they are, so they
  /// are updated once per forward, as without recomputation.
  bool keepRunningStatistics = false;
  /// Data-parallel training on several ranks (DataParallel.h), or null for
  /// one process: BatchNorm synchronises its statistics over the dp group and
  /// Dropout draws the global batch's mask and applies this rank's slice.
  const DataParallelContext *dataParallel = nullptr;
  /// The artifact's device mesh (MeshContext.h), in training and inference:
  /// the collective ops (all_reduce, all_gather, all_slice,
  /// backward_all_reduce) find the group of their `mesh_axis` in it and count
  /// what they send. Null: no mesh, and a collective op is an error.
  const MeshContext *mesh = nullptr;
  /// A pipeline stage's run (mode pp): recv nodes read the tensors received
  /// from the previous stage here, send nodes leave theirs for the next one,
  /// both by slot. Null outside a pipeline stage; recv and send are then an
  /// error.
  StageBoundary *boundary = nullptr;
  /// Split backward (zero_bubble schedules, pp_delay_wgrad): in training with
  /// grad mode on, linear and conv2d record a node whose backward computes
  /// only the input gradient and queues the weight and bias gradients here,
  /// to be run later (the schedule's W). Null: autograd computes all of them.
  WeightGradQueue *weightGrads = nullptr;
  /// Linear and conv2d take the dense kernels, never the event-driven ones:
  /// set on every pass of a schedule that splits the backward, whose deferring
  /// layers are dense, so that a recomputed stage's first forward (no graph,
  /// nothing deferred) computes the bits its recomputation does.
  bool denseLayers = false;
  /// Where the neuron kernels add the spikes each layer fired
  /// (FiringCounts.h); null: nobody asked. A recomputed forward
  /// (keepRunningStatistics) adds nothing: its spikes were counted once.
  FiringCounts *firing = nullptr;
};

/// Computes a node's output from its inputs (absent optional inputs are
/// undefined tensors).
using Kernel = std::function<at::Tensor(const std::vector<at::Tensor> &,
                                        const RunContext &)>;

/// Validates a node's attributes and returns its kernel.
using KernelBuilder = std::function<Kernel(const Node &)>;

struct OpDef {
  int minInputs = 1;
  int maxInputs = 1;
  /// 1, or 0 for an op that only has an effect (send): its kernel returns
  /// an undefined tensor.
  int outputs = 1;
  KernelBuilder build;
  /// The output may be a view of an input (a reshape, an identity
  /// collective): a parameter read through it is still in use (fsdp keeps
  /// its unit gathered until that later step; Executor::parameterUse()).
  bool mayViewInput = false;
};

/// Whether an op's output may share storage with an input.
enum class OutputStorage { Fresh, MayViewInput };

class OpRegistry {
public:
  /// Registers the kernel of an op of the schema's artifact op table
  /// (snn/Schema/ArtifactOps.h), which also gives its input counts. An op the
  /// table does not list is a programming error (std::logic_error).
  /// `outputs`: how many outputs its nodes have (1, or 0).
  void add(const char *opType, KernelBuilder build, int outputs = 1,
           OutputStorage storage = OutputStorage::Fresh);
  /// Null if `opType` is unknown.
  const OpDef *lookup(const std::string &opType) const;
  std::vector<std::string> opTypes() const;

  /// Every op this runtime implements.
  static const OpRegistry &builtin();

private:
  std::map<std::string, OpDef> ops;
};

/// Stateless layers: linear, conv2d, batch_norm, pooling, flatten, dropout,
/// add, mul, mean_time.
void registerLayerOps(OpRegistry &registry);

/// group_norm, the per-step reshape, concat, sum_time and reduce_mean
/// (PerStepShapeOps.cpp).
void registerPerStepShapeOps(OpRegistry &registry);
/// spiking_attention (AttentionOps.cpp).
void registerAttentionOps(OpRegistry &registry);

/// Stateful neurons: if_node, lif_node, plif_node.
void registerNeuronOps(OpRegistry &registry);
/// neuron: any neuron described by its parts (DescribedNeuronOps.cpp).
void registerDescribedNeuronOps(OpRegistry &registry);
/// parallel_neuron: SpikingJelly's PSN, MaskedPSN, SlidingPSN (ParallelNeuronOps.cpp).
void registerParallelNeuronOps(OpRegistry &registry);

/// Partitioned programs: bias_add and the collectives all_reduce,
/// all_gather, all_slice, backward_all_reduce.
void registerCollectiveOps(OpRegistry &registry);

/// Pipeline stage boundaries: recv (no input) and send (no output).
void registerPipelineOps(OpRegistry &registry);

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_OPREGISTRY_H
