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

#include <ATen/core/Tensor.h>

namespace snn::runtime {

class Model {
public:
  /// Copies the artifact's parameters into a ParameterStore and builds the
  /// executor of the artifact's program over them. Throws Error (naming the
  /// file and node) for a program the runtime cannot run.
  explicit Model(const Artifact &artifact);

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
  at::Tensor forward(const at::Tensor &input, bool training);

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

  /// Sees every step of every forward (training and inference); null: none.
  /// Must outlive its use.
  void setExecutionObserver(ExecutionObserver *value) { observer = value; }

  ParameterStore &params() { return store; }
  const ParameterStore &params() const { return store; }

  /// The artifact's manifest (input/output specs, parameter list, plan).
  const Manifest &manifest() const { return manifestCopy; }
  const Executor &executor() const { return exec; }

private:
  Manifest manifestCopy;
  ParameterStore store;
  Executor exec;
  const DataParallelContext *dataParallel = nullptr;
  const MeshContext *mesh = nullptr;
  ExecutionObserver *observer = nullptr;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_MODEL_H
