//===- Model.h - A trainable model built from an artifact -------*- C++ -*-===//
//
// The API the trainer uses: a Model owns the parameters and buffers of one
// rank's program (ParameterStore) and an Executor bound to them.
//
//   Artifact artifact = loadArtifact(dir);
//   Model model(artifact);
//   model.params().zeroGrad();
//   at::Tensor out = model.forward(x, /*training=*/true); // autograd graph
//   loss(out).backward();            // grads on model.params().parameters()
//   ... optimizer updates the parameter tensors in place (under no-grad) ...
//
// Semantics follow docs/training.md: in training, BatchNorm normalises with
// the statistics of the whole [T*N, ...] fold and updates its running
// statistics in the store; Dropout draws its mask with at::dropout on the
// folded tensor from ATen's default CPU generator. Neurons restart from
// v_reset on every forward.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_MODEL_H
#define SNN_RUNTIME_EXECUTION_MODEL_H

#include "snn/Runtime/Execution/Artifact.h"
#include "snn/Runtime/Execution/Executor.h"
#include "snn/Runtime/Execution/ParameterStore.h"
#include "snn/Runtime/Execution/StageBoundary.h"
#include "snn/Runtime/Execution/StageInterface.h"

#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <vector>

namespace snn::runtime {

class WeightGradQueue;

/// Whether the plan asks for recomputation (`memopt_level` >= 1) of a program each rank runs
/// whole, without gathering parameters step by step (modes none, dp and tp, with or without
/// zero; not fsdp, fsdp_tp or pp).
bool planRecomputesSegments(const Manifest &manifest);

class Model {
public:
  /// Copies the artifact's parameters into a ParameterStore and builds the
  /// executor of the artifact's program over them (a pipeline rank: one
  /// executor per stage it runs, over one store of all their parameters).
  /// Throws Error (naming the file and node) for a program the runtime cannot
  /// run.
  explicit Model(const Artifact &artifact);
  /// The same over the caller's tensors: every entry of `adopted` replaces the store's tensor
  /// of that name before the executors bind them (ParameterStore::adopt), so the program
  /// reads, and backward fills the gradients of, those very tensors.
  Model(const Artifact &artifact, const std::map<std::string, at::Tensor> &adopted);

  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;
  Model(Model &&) = default;
  Model &operator=(Model &&) = default;

  /// Runs the program on `input` (already time-major and of the manifest's
  /// shape; see Boundary.h's prepareInput).
  /// - training = true: gradient recording is switched on for the call, so
  ///   `forward(x, true)` followed by `loss.backward()` fills the parameters'
  ///   grads (BPTT through the neurons); batch statistics, active Dropout.
  /// - training = false: runs under c10::InferenceMode (no graph, running
  ///   statistics, Dropout is the identity). The result is an inference
  ///   tensor: read it or feed it to functional ops (metrics, eval loss), but
  ///   do not call backward through it.
  /// Throws Error naming the node when an op fails.
  /// A pipeline model runs here only when it holds every stage (a pp axis of
  /// one): the stages run in order, each handing its sent tensors to the
  /// next (one autograd graph through all of them). Otherwise the stages run
  /// one by one through runStage, under the pipeline schedule.
  at::Tensor forward(const at::Tensor &input, bool training);

  /// Pipeline artifacts: the logical stages this rank runs, ascending (empty
  /// for other artifacts).
  const std::vector<int64_t> &stages() const { return stageIds; }
  bool isPipeline() const { return !stageIds.empty(); }
  /// The recv and send slots of one of stages().
  const StageInterface &stageInterface(int64_t stage) const;
  /// The nodes of one of stages(), in program order (= its executor's
  /// steps).
  const std::vector<Node> &stageNodes(int64_t stage) const;
  /// Runs one of stages() once: on `input` (stage 0; ignored by the others)
  /// and `boundary.received`; fills `boundary.sent` and returns the graph
  /// output (the last stage; undefined for the others).
  /// `weightGrads` (passes with a graph, may be null): split backward;
  /// `denseLayers`: no event-driven Linear or conv2d (RunContext).
  at::Tensor runStage(int64_t stage, const at::Tensor &input,
                      StageBoundary &boundary, StagePass pass,
                      WeightGradQueue *weightGrads = nullptr, bool denseLayers = false);

  /// Data-parallel training (DataParallel.h): training forwards synchronise
  /// BatchNorm and Dropout over `context`'s group. Null (the default): one
  /// process. The context must outlive its use.
  void setDataParallel(const DataParallelContext *context) {
    dataParallel = context;
  }
  const DataParallelContext *dataParallelContext() const {
    return dataParallel;
  }

  /// The device mesh of a partitioned artifact's collectives (MeshContext.h),
  /// for training and inference forwards; null (the default): none. Must
  /// outlive its use.
  void setMesh(const MeshContext *context) { mesh = context; }
  const MeshContext *meshContext() const { return mesh; }

  /// Training forwards recompute their segments in the backward
  /// (Executor::runRecomputingSegments; snn-run train --recompute). On from the start where
  /// planRecomputesSegments(manifest). A pipeline recomputes stages instead
  /// (PipelineEngine::setRecomputedStages), and an execution observer (fsdp) sees every
  /// step, so neither may turn it on.
  void setRecomputation(bool on);
  bool recomputes() const { return recompute; }

  /// Sees every step of every forward (training and inference); null: none.
  /// Must outlive its use.
  void setExecutionObserver(ExecutionObserver *value) { observer = value; }

  /// Where forward() and runStage() add the spikes each neuron layer fires
  /// (FiringCounts.h); null (the default): nothing is counted.
  void setFiringCounts(FiringCounts *value) { firing = value; }
  FiringCounts *firingCounts() const { return firing; }

  ParameterStore &params() { return store; }
  const ParameterStore &params() const { return store; }

  /// The artifact's manifest (input/output specs, parameter list, plan).
  const Manifest &manifest() const { return manifestCopy; }
  /// The program's executor (a pipeline rank's first stage's).
  const Executor &executor() const { return execs.front(); }

private:
  void buildExecutors(const Artifact &artifact);
  size_t stageIndex(int64_t stage) const;
  at::Tensor forwardThroughStages(const at::Tensor &input, bool training);

  Manifest manifestCopy;
  ParameterStore store;
  std::vector<Executor> execs;            // one, or one per stage
  std::vector<int64_t> stageIds;          // pipeline: the stage of each
  std::vector<StageInterface> interfaces; // pipeline: the boundary of each
  std::vector<std::vector<Node>> nodes;   // pipeline: the nodes of each
  const DataParallelContext *dataParallel = nullptr;
  const MeshContext *mesh = nullptr;
  ExecutionObserver *observer = nullptr;
  FiringCounts *firing = nullptr;
  bool recompute = false;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_MODEL_H
