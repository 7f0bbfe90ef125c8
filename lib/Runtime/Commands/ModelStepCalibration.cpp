//===- ModelStepCalibration.cpp - One model's training step, measured ----===//

#include "snn/Runtime/Commands/ModelStepCalibration.h"
#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Execution/Artifact.h"
#include "snn/Runtime/Execution/DataParallel.h"
#include "snn/Runtime/Execution/SpikingBlockFusion.h"
#include "snn/Runtime/Execution/Model.h"
#include "snn/Runtime/Optim/Loss.h"
#include "snn/Runtime/Optim/Optimizer.h"
#include "snn/Runtime/Sharding/ParameterSharding.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Schema/TrainingCommunication.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <memory>

namespace snn::runtime {

namespace {

/// Replicas' steps per sample (a fixed count: every rank must make the same steps).
constexpr int64_t kReplicatedStepsPerSample = 2;

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

/// One training step of `model` at `batch` samples of uniform random input: forward in
/// training mode, the MSE loss of the firing rate against class 0, backward, an SGD step.
std::function<void()> trainingStep(Model &model, Optimizer &optimizer, int64_t batch) {
  const Manifest &manifest = model.manifest();
  at::Tensor input = at::rand(shapeAt(manifest.input.shape, batch));
  at::Tensor labels = at::zeros({batch}, at::kLong);
  bool timeMajor = manifest.output.timeMajor;
  return [&model, &optimizer, input, labels, timeMajor] {
    model.params().zeroGrad();
    at::Tensor output = model.forward(input, /*training=*/true);
    computeLoss(firingRate(output, timeMajor), labels, LossKind::Mse).backward();
    optimizer.step(1e-3);
  };
}

/// A model loaded for calibration, with the optimizer its steps update.
struct CalibratedModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<Optimizer> optimizer;
};

OptimizerConfig calibrationSgd() {
  OptimizerConfig sgd;
  sgd.momentum = 0.9;
  return sgd;
}

/// DIR's model, checked as calibrate asks (checkManifest).
std::unique_ptr<Model> loadCheckedModel(const std::string &dir) {
  Artifact artifact = loadArtifact(dir);
  checkManifest(artifact.manifest, dir);
  return std::make_unique<Model>(artifact);
}

CalibratedModel loadCalibratedModel(const std::string &dir) {
  CalibratedModel loaded{loadCheckedModel(dir), nullptr};
  loaded.optimizer =
      std::make_unique<Optimizer>(calibrationSgd(), loaded.model->params().parameterNames(),
                                  loaded.model->params().parameters());
  return loaded;
}

/// A model loaded as one data-parallel replica over `replicas`' group: SyncBatchNorm over
/// it, its gradients averaged by the runtime's bucketed all-reduce.
struct ReplicaModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<ParameterSharding> sharding;
};

ReplicaModel loadReplicaModel(const std::string &dir, const DataParallelContext &replicas) {
  ReplicaModel loaded{loadCheckedModel(dir), nullptr};
  loaded.model->setDataParallel(&replicas);
  loaded.sharding = makeReplicatedSharding(*loaded.model, calibrationSgd(), &replicas);
  return loaded;
}

/// One data-parallel training step of a replica at `batch` samples, as the trainer makes
/// it: the step's loss and correct count all-reduced while backward runs, the gradients
/// by the reducer's buckets, then the update.
std::function<void()> replicaStep(ReplicaModel &replica, const DataParallelContext &replicas,
                                  int64_t batch) {
  const Manifest &manifest = replica.model->manifest();
  at::Tensor input = at::rand(shapeAt(manifest.input.shape, batch));
  at::Tensor labels = at::zeros({batch}, at::kLong);
  bool timeMajor = manifest.output.timeMajor;
  return [&replica, &replicas, input, labels, timeMajor] {
    replica.model->params().zeroGrad();
    at::Tensor output = replica.model->forward(input, /*training=*/true);
    at::Tensor loss = computeLoss(firingRate(output, timeMajor), labels, LossKind::Mse);
    at::Tensor totals = at::empty({schema::kStepMetricsElements}, at::kDouble);
    totals.data_ptr<double>()[0] = double(loss.item<float>());
    totals.data_ptr<double>()[1] = 0.0;
    dist::PendingCollective metrics =
        dist::allReduceAsync(replicas.group, totals, dist::ReduceOp::Sum);
    loss.backward();
    replica.sharding->finishBackward();
    metrics.wait();
    replica.sharding->step(1e-3);
  };
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

/// The models, each with its parameter count and input shape (a model given twice, under
/// two directories, is refused: the planner finds a model by those).
std::vector<CalibratedModel> loadModels(const std::vector<std::string> &dirs,
                                        std::vector<schema::ModelStepCurve> &curves) {
  std::vector<CalibratedModel> models;
  for (const std::string &dir : dirs) {
    models.push_back(loadCalibratedModel(dir));
    schema::ModelStepCurve curve;
    curve.model = dir;
    curve.parameters = trainableElements(*models.back().model);
    curve.input = models.back().model->manifest().input.shape;
    if (curve.parameters == 0)
      throw Error("--model " + dir + ": the model has no trainable parameters");
    for (const schema::ModelStepCurve &other : curves)
      if (other.parameters == curve.parameters && other.input == curve.input)
        throw Error("--model " + dir + " and --model " + other.model +
                    " are the same model (parameters and input shape); give one");
    curves.push_back(std::move(curve));
  }
  return models;
}

/// The models, their curves' sizes, and for each sampled call the point it measures.
struct ModelStepSampler::State {
  struct Slot {
    size_t model = 0;
    bool fused = true;
    size_t batch = 0;
  };
  std::vector<CalibratedModel> models;
  std::vector<schema::ModelStepCurve> curves;
  std::vector<Slot> slots;
  std::unique_ptr<InterleavedSampler> sampler;
};

ModelStepSampler::ModelStepSampler(const std::vector<std::string> &dirs,
                                   const std::vector<int64_t> &batches,
                                   const CalibrationTiming &timing)
    : state(std::make_unique<State>()) {
  state->models = loadModels(dirs, state->curves);
  // Every (model, blocks on or off, batch) is one call, sampled in rounds over all of
  // them. Where blocks ran, the runs that take them apart (SyncBatchNorm over dp replicas,
  // fsdp, recomputation) take another time: measured, not scaled.
  std::vector<std::function<void()>> calls;
  for (size_t m = 0; m < state->models.size(); ++m) {
    Model &model = *state->models[m].model;
    Optimizer &optimizer = *state->models[m].optimizer;
    int64_t fusedBefore = spikingBlockCounts().fused;
    {
      SpikingBlocksSwitch on(true);
      trainingStep(model, optimizer, batches.front())();
    }
    bool blocks = spikingBlockCounts().fused > fusedBefore;
    for (bool fused : {true, false}) {
      if (!fused && !blocks)
        continue;
      std::vector<schema::ProfilePoint> &points =
          fused ? state->curves[m].points : state->curves[m].nodeByNodePoints;
      for (size_t b = 0; b < batches.size(); ++b) {
        points.push_back({double(batches[b]), 0.0});
        if (fused)
          state->curves[m].coldPoints.push_back({double(batches[b]), 0.0});
        std::function<void()> step = trainingStep(model, optimizer, batches[b]);
        calls.push_back([step, fused] {
          SpikingBlocksSwitch switched(fused);
          step();
        });
        state->slots.push_back({m, fused, b});
      }
    }
  }
  // A step after other models' or sizes' steps finds its weights and activations out of
  // the caches and its buffers taken (20 models' steps timed so were 1.1-1.6x their
  // steady steps): timed apart, it is the cold point; the steps after it, the steady one.
  CalibrationTiming apart = timing;
  apart.firstCallApart = true;
  state->sampler = std::make_unique<InterleavedSampler>(std::move(calls), apart);
}

ModelStepSampler::~ModelStepSampler() = default;

void ModelStepSampler::sample(int rounds, const CalibrationProgressFn &progress) {
  for (int round = 0; round < rounds; ++round) {
    if (progress)
      progress("model steps, in rounds", size_t(round), size_t(rounds));
    state->sampler->round();
  }
}

std::vector<schema::ModelStepCurve> ModelStepSampler::curves() const {
  std::vector<schema::ModelStepCurve> curves = state->curves;
  std::vector<double> medians = state->sampler->medians();
  std::vector<double> cold = state->sampler->firstCallMedians();
  for (size_t i = 0; i < medians.size(); ++i) {
    const State::Slot &slot = state->slots[i];
    schema::ModelStepCurve &curve = curves[slot.model];
    (slot.fused ? curve.points : curve.nodeByNodePoints)[slot.batch].seconds = medians[i];
    if (slot.fused)
      curve.coldPoints[slot.batch].seconds = cold[i];
  }
  return curves;
}

std::vector<schema::ProfilePoint>
measureReplicatedSteps(const std::string &dir, const dist::Group &group,
                       const std::vector<int64_t> &batches, const CalibrationTiming &timing,
                       const CalibrationProgressFn &progress) {
  DataParallelContext replicas;
  replicas.group = group;
  ReplicaModel loaded = loadReplicaModel(dir, replicas);
  // Every rank makes the same number of steps (each one's collectives), in rounds over the
  // batch sizes; a barrier starts each sample together, and a sample's second step starts
  // as training's do, from the first one's end (one step a sample gave 74 ms at 8 samples
  // and 68 ms at 16 on 4 ranks of 2 CPUs, the woken ranks' turns).
  std::vector<std::function<void()>> calls;
  for (int64_t batch : batches)
    calls.push_back(replicaStep(loaded, replicas, batch));
  std::string what = "model step " + dir + " on " + std::to_string(group.size()) +
                     " replicas, in rounds";
  std::vector<double> medians = interleavedMedianSeconds(
      calls, timing, roundProgress(progress, what, timing),
      std::vector<int64_t>(batches.size(), kReplicatedStepsPerSample),
      [&group] { dist::barrier(group); });
  std::vector<schema::ProfilePoint> points;
  for (size_t i = 0; i < batches.size(); ++i)
    points.push_back({double(batches[i]), medians[i]});
  return points;
}

} // namespace snn::runtime
