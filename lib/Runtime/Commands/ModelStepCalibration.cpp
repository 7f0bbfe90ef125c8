//===- ModelStepCalibration.cpp - One model's training step, measured ----===//

#include "snn/Runtime/Commands/ModelStepCalibration.h"
#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Execution/Artifact.h"
#include "snn/Runtime/Execution/DataParallel.h"
#include "snn/Runtime/Execution/SpikingBlockFusion.h"
#include "snn/Runtime/Execution/Model.h"
#include "snn/Runtime/Optim/Loss.h"
#include "snn/Runtime/Optim/Optimizer.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Schema/ArtifactOps.h"

#include <ATen/ops/rand.h>
#include <ATen/ops/zeros.h>

#include <algorithm>

namespace snn::runtime {

namespace {

/// What calibrate asks of an artifact, with `dir` in every message.
void checkManifest(const Manifest &manifest, const std::string &dir) {
  const std::string prefix = "--model " + dir + ": ";
  if (manifest.plan.partitioned || manifest.programs.size() != 1 ||
      manifest.plan.mode == schema::ParallelMode::PP)
    throw Error(prefix + "its programs are per-rank parts (plan mode " +
                schema::nameOf(manifest.plan.mode) +
                "); calibrate a compile of the whole model (snn-compile MODEL.onnx -o DIR)");
  const std::vector<int64_t> &shape = manifest.input.shape;
  if (std::count(shape.begin(), shape.end(), -1) != 1)
    throw Error(prefix + "the input shape needs exactly one free (batch) dimension");
}

std::vector<int64_t> shapeAt(std::vector<int64_t> shape, int64_t batch) {
  std::replace(shape.begin(), shape.end(), int64_t(-1), batch);
  return shape;
}

int64_t trainableElements(const Model &model) {
  int64_t total = 0;
  for (const at::Tensor &p : model.params().parameters())
    total += p.numel();
  return total;
}

/// Times `step` (a call) at one batch size.
using StepTimer = std::function<double(const std::function<void()> &)>;

/// The step at each batch size; `label` names the pass in the progress.
std::vector<schema::ProfilePoint> measureStepCurve(Model &model, Optimizer &optimizer,
                                                   const std::vector<int64_t> &batches,
                                                   const StepTimer &time,
                                                   const CalibrationProgressFn &progress,
                                                   const std::string &label) {
  const Manifest &manifest = model.manifest();
  std::vector<schema::ProfilePoint> points;
  for (size_t i = 0; i < batches.size(); ++i) {
    if (progress)
      progress(label, i, batches.size());
    int64_t batch = batches[i];
    at::Tensor input = at::rand(shapeAt(manifest.input.shape, batch));
    at::Tensor labels = at::zeros({batch}, at::kLong);
    auto step = [&] {
      model.params().zeroGrad();
      at::Tensor output = model.forward(input, /*training=*/true);
      computeLoss(firingRate(output, manifest.output.timeMajor), labels, LossKind::Mse)
          .backward();
      optimizer.step(1e-3);
    };
    points.push_back({double(batch), time(step)});
  }
  return points;
}

StepTimer medianTimer(const CalibrationTiming &timing) {
  return [timing](const std::function<void()> &step) { return medianSeconds(step, timing); };
}

bool hasBatchNorm(const Artifact &artifact) {
  const std::vector<Node> &nodes = artifact.program.nodes;
  return std::any_of(nodes.begin(), nodes.end(),
                     [](const Node &node) { return node.opType == schema::op::kBatchNorm; });
}

/// Restores the spiking-block switch however the measurement ends.
class SpikingBlocksSwitch {
public:
  explicit SpikingBlocksSwitch(bool enabled) : before(spikingBlocksEnabled()) {
    setSpikingBlocksEnabled(enabled);
  }
  ~SpikingBlocksSwitch() { setSpikingBlocksEnabled(before); }

private:
  bool before;
};

} // namespace

std::vector<int64_t> defaultModelBatches() { return {1, 2, 4, 8, 16, 32, 64}; }

void checkModelToCalibrate(const std::string &dir) {
  checkManifest(loadArtifact(dir).manifest, dir);
}

schema::ModelStepCurve measureModelSteps(const std::string &dir,
                                         const std::vector<int64_t> &batches,
                                         const CalibrationTiming &timing,
                                         const CalibrationProgressFn &progress) {
  Artifact artifact = loadArtifact(dir);
  checkManifest(artifact.manifest, dir);
  Model model(artifact);
  OptimizerConfig sgd;
  sgd.momentum = 0.9;
  Optimizer optimizer(sgd, model.params().parameterNames(), model.params().parameters());
  int64_t parameters = trainableElements(model);
  if (parameters == 0)
    throw Error("--model " + dir + ": the model has no trainable parameters");

  schema::ModelStepCurve curve;
  curve.model = dir;
  curve.parameters = parameters;
  curve.input = model.manifest().input.shape;
  int64_t fusedBefore = spikingBlockCounts().fused;
  {
    SpikingBlocksSwitch blocks(true);
    curve.points = measureStepCurve(model, optimizer, batches, medianTimer(timing), progress,
                                    "model step " + dir);
  }
  // Where blocks ran, the runs that take them apart (SyncBatchNorm over dp replicas,
  // fsdp, recomputation) take another time: measured, not scaled.
  if (spikingBlockCounts().fused > fusedBefore) {
    SpikingBlocksSwitch blocks(false);
    curve.nodeByNodePoints = measureStepCurve(model, optimizer, batches, medianTimer(timing),
                                              progress, "model step " + dir + " node by node");
  }
  return curve;
}

std::vector<schema::ProfilePoint>
measureReplicatedSteps(const std::string &dir, const dist::Group &group,
                       const std::vector<int64_t> &batches, const CalibrationTiming &timing,
                       const CalibrationProgressFn &progress) {
  Artifact artifact = loadArtifact(dir);
  checkManifest(artifact.manifest, dir);
  if (!hasBatchNorm(artifact))
    return {};
  Model model(artifact);
  DataParallelContext replicas;
  replicas.group = group;
  model.setDataParallel(&replicas);
  OptimizerConfig sgd;
  sgd.momentum = 0.9;
  Optimizer optimizer(sgd, model.params().parameterNames(), model.params().parameters());
  // Every rank makes the same number of steps (each one's SyncBatchNorm is a collective);
  // a barrier starts each sample together.
  StepTimer fixed = [&](const std::function<void()> &step) {
    return medianSecondsFixed(step, 1, timing, [&group] { dist::barrier(group); });
  };
  std::vector<schema::ProfilePoint> points = measureStepCurve(
      model, optimizer, batches, fixed, progress,
      "model step " + dir + " on " + std::to_string(group.size()) + " replicas");
  model.setDataParallel(nullptr);
  return points;
}

} // namespace snn::runtime
