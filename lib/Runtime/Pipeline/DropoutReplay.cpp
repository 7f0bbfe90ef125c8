//===- DropoutReplay.cpp - A pipeline's Dropout masks, as one process draws them ===//

#include "snn/Runtime/Pipeline/DropoutReplay.h"
#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Execution/Model.h"
#include "snn/Runtime/Execution/NodeAttributes.h"
#include "snn/Runtime/Execution/RandomState.h"
#include "snn/Runtime/Execution/StageBoundary.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Schema/ArtifactOps.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>

#include <cstring>

namespace snn::runtime {

namespace {

/// The output shapes of chosen steps of one run.
class ShapeRecorder : public ExecutionObserver {
public:
  explicit ShapeRecorder(std::map<size_t, std::vector<int64_t>> &shapes) : shapes(shapes) {}
  void beforeStep(size_t) override {}
  void afterStep(size_t step, const at::Tensor &output) override {
    auto it = shapes.find(step);
    if (it != shapes.end() && output.defined())
      it->second = output.sizes().vec();
  }

private:
  std::map<size_t, std::vector<int64_t>> &shapes;
};

/// `shape` for one sample: dimension 1 (N) set to 1.
std::vector<int64_t> oneSample(std::vector<int64_t> shape, const std::string &what) {
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] < 0 && d != 1)
      throw Error("pipeline: " + what + " has a dynamic dimension " + std::to_string(d) +
                  "; only the batch (dimension 1) may be");
  shape[1] = 1;
  return shape;
}

/// The draws of at::dropout(x, p, true) on the [T*n, ...] fold (mask of
/// the fold's shape, bernoulli_(1 - p)); p = 0 and p = 1 draw nothing.
void draw(double p, std::vector<int64_t> shape, int64_t samples) {
  if (!(p > 0.0 && p < 1.0))
    return;
  shape[1] = samples;
  std::vector<int64_t> fold{shape[0] * shape[1]};
  fold.insert(fold.end(), shape.begin() + 2, shape.end());
  at::empty(fold, at::kFloat).bernoulli_(1.0 - p);
}

at::Tensor longTensor(const std::vector<int64_t> &values, int64_t length) {
  at::Tensor t = at::full({length}, -1, at::kLong);
  std::memcpy(t.data_ptr<int64_t>(), values.data(), values.size() * sizeof(int64_t));
  return t;
}

} // namespace

DropoutReplay::DropoutReplay(Model &model, const PipelinePlace &place)
    : where(place), layers(size_t(place.layout.stageCount)) {
  for (int64_t stage : model.stages())
    layers[size_t(stage)] = discover(model, stage);
  if (place.group && place.group->valid() && place.group->size() > 1)
    exchange();
  for (const auto &stage : layers)
    for (const Layer &layer : stage)
      drawing = drawing || (layer.p > 0.0 && layer.p < 1.0);
}

/// The stage's Dropout layers with their input shapes, from a run in eval
/// mode (Dropout is the identity) on zeros of one sample.
std::vector<DropoutReplay::Layer> DropoutReplay::discover(Model &model, int64_t stage) {
  const std::vector<Node> &nodes = model.stageNodes(stage);
  std::vector<Layer> found;
  std::map<size_t, std::vector<int64_t>> shapes;
  for (size_t step = 0; step < nodes.size(); ++step)
    if (nodes[step].opType == schema::op::kDropout) {
      found.push_back({dropoutProbability(nodes[step]), {}});
      shapes[step] = {};
    }
  if (found.empty())
    return found;
  const StageInterface &face = model.stageInterface(stage);
  StageBoundary boundary;
  for (const BoundarySlot &recv : face.recvs)
    boundary.received[recv.slot] = at::zeros(recvShape(recv, 1), at::kFloat);
  at::Tensor input;
  if (face.hasInput)
    input = at::zeros(oneSample(model.manifest().input.shape, "the input"), at::kFloat);
  ShapeRecorder recorder(shapes);
  model.setExecutionObserver(&recorder);
  model.runStage(stage, input, boundary, StagePass::Eval);
  model.setExecutionObserver(nullptr);
  size_t i = 0;
  for (auto &[step, shape] : shapes)
    found[i++].shape = oneSample(shape, "dropout node '" + nodes[step].name + "'");
  return found;
}

/// Collective over the pp group: [stage, count, then per layer: p's bits,
/// rank, dims...] of every member's stages.
void DropoutReplay::exchange() {
  std::vector<int64_t> mine;
  for (size_t stage = 0; stage < layers.size(); ++stage) {
    if (where.layout.coordinateOf(int64_t(stage)) != where.coordinate)
      continue;
    mine.insert(mine.end(), {int64_t(stage), int64_t(layers[stage].size())});
    for (const Layer &layer : layers[stage]) {
      int64_t bits;
      std::memcpy(&bits, &layer.p, sizeof(bits));
      mine.insert(mine.end(), {bits, int64_t(layer.shape.size())});
      mine.insert(mine.end(), layer.shape.begin(), layer.shape.end());
    }
  }
  at::Tensor length = longTensor({int64_t(mine.size())}, 1);
  dist::allReduce(*where.group, length, dist::ReduceOp::Max);
  int64_t width = std::max<int64_t>(length.item<int64_t>(), 1);
  at::Tensor all = dist::allGather(*where.group, longTensor(mine, width));
  for (int member = 0; member < where.group->size(); ++member) {
    const int64_t *at = all.data_ptr<int64_t>() + member * width, *end = at + width;
    while (at < end && *at >= 0) {
      std::vector<Layer> &stage = layers[size_t(at[0])];
      stage.assign(size_t(at[1]), Layer());
      at += 2;
      for (Layer &layer : stage) {
        std::memcpy(&layer.p, at, sizeof(layer.p));
        layer.shape.assign(at + 2, at + 2 + at[1]);
        at += 2 + at[1];
      }
    }
  }
}

void DropoutReplay::planStep(int64_t samples) {
  if (!drawing)
    return;
  starts.clear();
  int64_t microbatches = where.layout.microbatches;
  for (int64_t chunk = 0; chunk < where.replicas * microbatches; ++chunk)
    for (int64_t stage = 0; stage < where.layout.stageCount; ++stage) {
      if (chunk / microbatches == where.replica &&
          where.layout.coordinateOf(stage) == where.coordinate)
        starts[{chunk % microbatches, stage}] = cpuGeneratorState();
      for (const Layer &layer : layers[size_t(stage)])
        draw(layer.p, layer.shape, samples);
    }
  after = cpuGeneratorState();
}

void DropoutReplay::enter(int64_t stage, int64_t microbatch) {
  if (drawing)
    setCpuGeneratorState(starts.at({microbatch, stage}));
}

void DropoutReplay::finishStep() {
  if (drawing)
    setCpuGeneratorState(after);
}

} // namespace snn::runtime
