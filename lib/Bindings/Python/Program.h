//===- Program.h - One rank's program for the Python API --------*- C++ -*-===//
//
// What `spikemesh.apply` runs in each process: this rank's program of an artifact over the
// caller's tensors (the nn.Parameters and buffers of spikemesh's module), so a Python loss's
// backward runs the runtime's BPTT and fills their .grad.
//
// Under torchrun (`distributed`) the process joins the job once (one dist::World per process,
// from torchrun's variables, kept until shutdownWorld()) and the program runs as a rank of the
// artifact's mesh: every rank starts from world rank 0's tensors (as DistributedDataParallel
// does); a tp rank holds its part of each split parameter and runs its partition with the
// plan's collectives; SyncBatchNorm and Dropout run over the dp group; dp and zero average the
// gradients over the dp group by the bucketed all-reduce that overlaps with backward
// (finishBackward completes it; spikemesh queues it at the end of every backward); fsdp keeps
// the rank's pieces of the parameters (shardedParameters) and gathers each layer for its use;
// a pipeline rank runs its stages under the plan's schedule in trainStep, with the caller's
// criterion on the last stage.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_BINDINGS_PYTHON_PROGRAM_H
#define SNN_BINDINGS_PYTHON_PROGRAM_H

#include "snn/Runtime/Distributed/GradReducer.h"
#include "snn/Runtime/Execution/Artifact.h"
#include "snn/Runtime/Execution/DataParallel.h"
#include "snn/Runtime/Execution/FiringCounts.h"
#include "snn/Runtime/Execution/Model.h"
#include "snn/Runtime/Execution/ParameterPartition.h"
#include "snn/Runtime/Pipeline/PipelineEngine.h"
#include "snn/Runtime/Sharding/ParameterSharding.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace snn::python {

using TensorMap = std::map<std::string, at::Tensor>;

/// Leaves the torchrun job this process joined (spikemesh calls it at exit).
void shutdownWorld();

/// Built in two steps, because the caller's parameters must exist before the program binds
/// them and their shapes are this rank's (a tp split, a pipeline rank's stages): localParts
/// turns the model's whole tensors into this rank's parts, the caller makes its
/// nn.Parameters of them, and bind builds the program over those very tensors.
class Program {
public:
  /// The criterion of a pipeline step: (last stage's output, labels) -> loss.
  using Criterion = runtime::PipelineEngine::LossFunction;
  /// A training run's place and settings as a checkpoint records them (docs/checkpoints.md).
  struct CheckpointPosition {
    int64_t step = 0, epoch = 0, batch = 0;
    uint64_t seed = 0, runId = 0;
    std::vector<std::pair<std::string, std::string>> settings;
  };
  /// One parameter's optimizer state as this rank holds it: torch.optim's state tensors of
  /// its part (tp), its stage's parameter (pp) or its piece (fsdp), by torch.optim's names.
  struct OptimizerEntry {
    std::string param;
    int64_t step = 0;
    std::vector<std::pair<std::string, at::Tensor>> tensors;
  };
  struct LoadedCheckpoint {
    std::string path;
    CheckpointPosition position;
    std::string optimizerKind; // "sgd", "adam", "adamw", or "" without optimizer state
    std::vector<OptimizerEntry> optimizer;
    at::Tensor generatorState;
  };

  Program(const std::string &dir, bool distributed);

  /// (name, kind) of every parameter and buffer this rank's program reads, in manifest
  /// order; kind is "parameter" or "buffer" (a frozen weight is a buffer).
  std::vector<std::pair<std::string, std::string>> entries() const;
  /// Every parameter and buffer of the whole model (every rank's programs together).
  std::vector<std::string> modelNames() const;
  /// Collective: world rank 0's whole tensors; returns this rank's part of each of entries().
  TensorMap localParts(const TensorMap &whole);
  /// The program over `tensors` (this rank's parts, adopted).
  void bind(const TensorMap &tensors);

  /// `input` as the program takes it ([T, N, ...]), or a static [N, ...] batch repeated
  /// `repeatTime` times first. A pipeline runs only inference here, its output on every rank.
  at::Tensor forward(const at::Tensor &input, bool training, int64_t repeatTime);
  /// A pipeline's training step over the rank's batch: the schedule's forwards and backwards
  /// over the plan's microbatches, `criterion` on each of the last stage's outputs, the
  /// gradients (of loss / M) accumulated in .grad and averaged over dp. Returns the mean loss
  /// over the microbatches and dp replicas, on every rank.
  double trainStep(const at::Tensor &input, const at::Tensor &labels, int64_t repeatTime,
                   const Criterion &criterion);
  /// Completes the gradients of the backward that just ran (dp, zero: the average over the
  /// dp group; fsdp: the reduce-scatter of the layers backward left).
  void finishBackward();
  /// fsdp: (name, values, gradient) of this rank's piece of each parameter
  /// (ParameterSharding::localPieces); empty for the other modes.
  std::vector<std::tuple<std::string, at::Tensor, std::optional<at::Tensor>>>
  shardedParameters() const;
  /// Collective over the tp and pp axes: every parameter and buffer whole, by name.
  TensorMap wholeState();
  /// Every parameter and buffer this rank holds takes its part of `whole` (by name; the
  /// caller checked the names), in place: what the next forward reads.
  void loadWholeState(const TensorMap &whole);
  /// Collective: a whole checkpoint (what `snn-run train --resume` reads, of any mode) of
  /// this rank's parameters and buffers, `optimizer`'s state and the CPU generator, published
  /// atomically in `dir` as step-XXXXXXXX (the `keep` newest kept) by world rank 0; returns
  /// its path there (empty on the other ranks).
  std::string saveCheckpoint(const std::string &dir, const CheckpointPosition &position,
                             const std::string &optimizerKind,
                             const std::vector<OptimizerEntry> &optimizer, int keep);
  /// The latest checkpoint in `dir` (snn-run's or saveCheckpoint's, whole or sharded, of this
  /// model): parameters and buffers take its values (collective under fsdp); returns this
  /// rank's share of its optimizer state, its position and generator state.
  LoadedCheckpoint loadCheckpoint(const std::string &dir);
  /// How many ranks hold the very values this rank holds of parameter `name` (its gradient
  /// too): the sizes of the mesh axes over which it is replicated (not its tp split's axis,
  /// not an fsdp dp axis, never pp, whose stages hold different parameters).
  int64_t copiesOf(const std::string &name) const;
  /// In place: the sum of `tensor` over every rank of the job.
  void sumOverWorld(at::Tensor tensor);
  /// `tensor` (same shape on every rank) becomes data-parallel rank `root`'s, in place.
  void broadcast(at::Tensor tensor, int root);
  /// The collectives the program's ops ran (forward and backward, every mesh axis) since
  /// the last resetCommStats(): (kind, mesh axis, calls, bytes, seconds).
  std::vector<std::tuple<std::string, std::string, int64_t, int64_t, double>> commStats() const;
  void resetCommStats() { mesh.stats().reset(); }
  /// The spikes each neuron layer of this rank's program fired in the forwards since the
  /// last resetFiringCounts(): (layer, spikes, elements, kernel), in program order.
  std::vector<std::tuple<std::string, double, double, std::string>> firingCounts() const;
  void resetFiringCounts() { firing.clear(); }
  /// Off: backwards accumulate this rank's gradients locally until it is on again.
  void setGradientSync(bool enabled);
  bool gradientSync() const;

  bool isPipeline() const { return engine != nullptr; }
  /// A pipeline's logical stages that recompute their activations (the plan's
  /// pp_memopt_stages until set), and the planner's cost of each logical stage.
  std::vector<int64_t> recomputedStages() const;
  void setRecomputedStages(const std::vector<int64_t> &stages);
  std::vector<double> stageCosts() const { return artifact.manifest.plan.ppStageCosts; }
  /// The logical stages this rank runs.
  std::vector<int64_t> localStages() const;
  /// Whether training forwards recompute their segments (the plan's memopt_level on modes
  /// none, dp and tp: Model::recomputes).
  bool recomputesSegments() const { return bound().recomputes(); }
  /// A recomputed stage keeps its spike inputs as bytes (PipelineEngine::setCompressedInputs).
  bool compressedInputs() const;
  void setCompressedInputs(bool enabled);
  /// fsdp on a dp axis of several ranks: bind's parameters are gathered per layer and this
  /// rank keeps only shardedParameters().
  bool fullySharded() const;
  std::vector<int64_t> inputShape() const { return artifact.manifest.input.shape; }
  std::vector<int64_t> outputShape() const { return artifact.manifest.output.shape; }
  int rank() const;
  int worldSize() const;
  int dataParallelRank() const;
  int dataParallelSize() const;

private:
  runtime::Model &bound();
  const runtime::Model &bound() const;
  bool holds(const std::string &name) const;
  runtime::PipelineEngine &pipeline(const char *what) const;
  void bindPipeline();
  at::Tensor programInput(const at::Tensor &input, int64_t repeatTime);

  runtime::DistributedRun run;
  runtime::Artifact artifact;
  runtime::MeshContext mesh;
  runtime::DataParallelContext dp;
  runtime::ParameterPartition partition;
  std::optional<runtime::Model> model;
  runtime::FiringCounts firing; // the model's forwards add to it
  std::unique_ptr<dist::GradBucketReducer> reducer; // dp, zero
  std::unique_ptr<runtime::ParameterSharding> fsdp; // fsdp, fsdp_tp
  std::optional<runtime::PipelinePlace> place;      // pp
  std::unique_ptr<runtime::PipelineEngine> engine;  // pp
};

} // namespace snn::python

#endif // SNN_BINDINGS_PYTHON_PROGRAM_H
