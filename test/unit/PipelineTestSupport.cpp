//===- PipelineTestSupport.cpp - Pipeline artifacts for tests -------------===//

#include "PipelineTestSupport.h"
#include "TestSupport.h"

#include "snn/Runtime/Execution/Artifact.h"
#include "snn/Runtime/Execution/Model.h"

#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/zeros.h>

#include <filesystem>
#include <map>

namespace snn::test {

namespace {

constexpr int64_t kHidden = 8;
constexpr int kUnits = 4;

struct Weight {
  std::string name;
  at::Tensor value;
  int unit;
  bool buffer = false;
};

at::Tensor uniform(std::vector<int64_t> shape, double low, double high,
                   uint64_t seed) {
  at::Generator g = at::detail::createCPUGenerator(seed);
  return at::rand(shape, g).mul(high - low).add(low);
}

/// Scaled so that every neuron layer fires at a moderate rate on inputs
/// uniform in [0, 1) (the tests check the rates).
std::vector<Weight> weights(uint64_t seed) {
  uint64_t s = seed * 100;
  return {
      {"fc0.weight", uniform({kHidden, kPipeFeatures}, -0.3, 0.9, s + 1), 0},
      {"fc0.bias", uniform({kHidden}, 0.0, 0.4, s + 2), 0},
      {"fc1.weight", uniform({kHidden, kHidden}, -0.4, 0.8, s + 3), 1},
      {"fc2.weight", uniform({kHidden, kHidden}, -0.6, 1.2, s + 4), 2},
      {"fc2.bias", uniform({kHidden}, 0.0, 0.3, s + 5), 2},
      {"bn2.weight", uniform({kHidden}, 0.8, 1.4, s + 6), 2},
      {"bn2.bias", uniform({kHidden}, 0.4, 0.9, s + 7), 2},
      {"bn2.running_mean", at::zeros({kHidden}), 2, true},
      {"bn2.running_var", at::ones({kHidden}), 2, true},
      {"sn2.w", at::zeros({}), 2},
      {"fc3.weight", uniform({kPipeClasses, kHidden}, -0.6, 1.6, s + 8), 3},
      {"fc3.bias", uniform({kPipeClasses}, 0.2, 0.6, s + 9), 3},
  };
}

onnx::AttributeProto none() { return intAttr("detach_reset", 0); }

std::string lif(ProgramBuilder &b, const std::string &x) {
  return b.addNode("lif_node", {x},
                   {floatAttr("v_threshold", 1.0f), floatAttr("v_reset", 0.0f),
                    floatAttr("tau", 2.0f), none()});
}

/// Emits unit `u` on the values `in` (unit 0: {"input"}); returns the values
/// the next unit reads (the last unit: {}).
std::vector<std::string> emitUnit(ProgramBuilder &b, int u,
                                  const std::vector<std::string> &in) {
  switch (u) {
  case 0: {
    std::string pre = b.addNode("linear", {in[0], "fc0.weight", "fc0.bias"});
    return {lif(b, pre), pre};
  }
  case 1: {
    std::string v = b.addNode("linear", {in[0], "fc1.weight"});
    v = lif(b, b.addNode("add", {v, in[1]}));
    return {b.addNode("dropout", {v}, {floatAttr("p", 0.25f)})};
  }
  case 2: {
    std::string v = b.addNode("linear", {in[0], "fc2.weight", "fc2.bias"});
    v = b.addNode("batch_norm", {v, "bn2.weight", "bn2.bias", "bn2.running_mean",
                                 "bn2.running_var"});
    return {b.addNode("plif_node", {v, "sn2.w"},
                      {floatAttr("v_threshold", 1.0f), floatAttr("v_reset", 0.0f),
                       stringAttr("surrogate", "atan"), floatAttr("alpha", 2.0f)})};
  }
  default: {
    std::string v = lif(b, b.addNode("linear", {in[0], "fc3.weight", "fc3.bias"}));
    b.addNode("mean_time", {v}, {}, "output");
    return {};
  }
  }
}

/// Stage program of units [first, last).
ProgramBuilder stageProgram(const std::vector<Weight> &all, int first, int last,
                            int64_t stage) {
  ProgramBuilder b;
  for (const Weight &w : all)
    if (w.unit >= first && w.unit < last)
      b.addInitializer(w.name, w.value);
  std::vector<std::string> values{"input"};
  if (first > 0) {
    b.dropGraphInput();
    size_t slots = first == 1 ? 2 : 1;
    values.clear();
    for (size_t slot = 0; slot < slots; ++slot) {
      values.push_back(b.addNode("recv", {}, {intAttr("peer", stage - 1),
                                              intAttr("slot", int64_t(slot))}));
      b.declareShape(values.back(), {kPipeSteps, -1, kHidden});
    }
  }
  for (int u = first; u < last; ++u)
    values = emitUnit(b, u, values);
  if (last < kUnits) {
    b.dropGraphOutput();
    for (size_t slot = 0; slot < values.size(); ++slot)
      b.addSink("send", {values[slot]},
                {intAttr("peer", stage + 1), intAttr("slot", int64_t(slot))});
  }
  return b;
}

nlohmann::json parameterEntries(const std::vector<Weight> &all, int64_t stages) {
  nlohmann::json list = nlohmann::json::array();
  for (const Weight &w : all) {
    nlohmann::json entry = {{"name", w.name},
                            {"shape", w.value.sizes().vec()},
                            {"kind", w.buffer ? "buffer" : "parameter"},
                            {"sharding", "replicated"}};
    if (stages > 0)
      entry["stage"] = int64_t(w.unit) * stages / kUnits;
    list.push_back(entry);
  }
  return list;
}

nlohmann::json pipelinePlan(const PipelineSpec &spec) {
  return {{"mode", "pp"},
          {"pp_mesh_dim", spec.dp > 1 ? 1 : 0},
          {"dp_mesh_dim", spec.dp > 1 ? 0 : -1},
          {"pp_schedule", spec.schedule},
          {"pp_microbatches", spec.microbatches},
          {"pp_virtual_stages", spec.stages / spec.ranks},
          {"pp_delay_wgrad", spec.delayWgrad},
          {"pp_memopt_stages", spec.recompute}};
}

} // namespace

std::vector<std::string> pipelineNeuronLayers() {
  return {"lif0", "lif1", "plif2", "lif3"};
}

void writePipelineArtifact(const std::string &dir, const PipelineSpec &spec) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  std::vector<Weight> all = weights(spec.seed);
  nlohmann::json manifest = makeManifest({kPipeSteps, -1, kPipeFeatures},
                                         {-1, kPipeClasses}, false);
  int64_t world = spec.dp * spec.ranks;
  manifest["version"] = 2;
  manifest["world_size"] = world;
  manifest["mesh"] = spec.dp > 1
                         ? nlohmann::json{{"axes", {"dp", "pp"}}, {"shape", {spec.dp, spec.ranks}}}
                         : nlohmann::json{{"axes", {"pp"}}, {"shape", {spec.ranks}}};
  manifest["programs"] = nlohmann::json::array();
  int unitsPerStage = kUnits / int(spec.stages);
  for (int64_t stage = 0; stage < spec.stages; ++stage) {
    std::string file = "program_" + std::to_string(stage) + ".onnx";
    int first = int(stage) * unitsPerStage;
    writeFile((fs::path(dir) / file).string(),
              stageProgram(all, first, first + unitsPerStage, stage).serialize());
    std::vector<int64_t> ranks;
    for (int64_t rank = 0; rank < world; ++rank)
      if (rank % spec.ranks == stage % spec.ranks)
        ranks.push_back(rank);
    manifest["programs"].push_back({{"file", file}, {"ranks", ranks}, {"stage", stage}});
  }
  manifest["parameters"] = parameterEntries(all, spec.stages);
  manifest["plan"] = pipelinePlan(spec);
  writeFile((fs::path(dir) / "manifest.json").string(), manifest.dump(2));
}

void writeUnsplitPipelineModel(const std::string &dir, uint64_t seed) {
  std::vector<Weight> all = weights(seed);
  nlohmann::json manifest = makeManifest({kPipeSteps, -1, kPipeFeatures},
                                         {-1, kPipeClasses}, false);
  manifest["parameters"] = parameterEntries(all, 0);
  writeArtifact(dir, stageProgram(all, 0, kUnits, 0), manifest);
}

namespace {

/// Spike rate of every neuron node of a one-program model.
class RateObserver : public runtime::ExecutionObserver {
public:
  explicit RateObserver(const runtime::Graph &program) : program(program) {}
  void beforeStep(size_t) override {}
  void afterStep(size_t step, const at::Tensor &output) override {
    const std::string &op = program.nodes[step].opType;
    if (op.size() > 5 && op.substr(op.size() - 5) == "_node")
      rates.push_back(output.mean().item<double>());
  }
  const runtime::Graph &program;
  std::vector<double> rates;
};

} // namespace

void expectModeratePipelineRates(const at::Tensor &x, uint64_t seed) {
  TempDir dir;
  writeUnsplitPipelineModel(dir.path(), seed);
  runtime::Artifact artifact = runtime::loadArtifact(dir.path());
  runtime::Model model(artifact);
  RateObserver observer(artifact.program);
  model.setExecutionObserver(&observer);
  model.forward(x, true);
  std::vector<std::string> layers = pipelineNeuronLayers();
  ASSERT_EQ(observer.rates.size(), layers.size());
  for (size_t i = 0; i < layers.size(); ++i) {
    EXPECT_GE(observer.rates[i], 0.05) << layers[i];
    EXPECT_LE(observer.rates[i], 0.5) << layers[i];
  }
}

} // namespace snn::test
