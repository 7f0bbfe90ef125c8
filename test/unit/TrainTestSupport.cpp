//===- TrainTestSupport.cpp - Trainable artifacts and data for tests ------===//

#include "TrainTestSupport.h"
#include "TestSupport.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/zeros.h>

namespace snn::test {

namespace {

nlohmann::json entry(const std::string &name, at::IntArrayRef shape,
                     const char *kind) {
  return {{"name", name},
          {"shape", shape.vec()},
          {"kind", kind},
          {"sharding", "replicated"}};
}

at::Generator generator(uint64_t seed) {
  return at::detail::createCPUGenerator(seed);
}

at::Tensor uniform(std::vector<int64_t> shape, double low, double high,
                   uint64_t seed) {
  return at::rand(shape, generator(seed)).mul(high - low).add(low);
}

} // namespace

void writeTrainableArtifact(const std::string &dir, int64_t hidden) {
  ProgramBuilder b;
  std::vector<std::pair<std::string, at::Tensor>> params = {
      {"fc1.weight", uniform({hidden, kTrainFeatures}, -0.8, 0.8, 1)},
      {"fc1.bias", uniform({hidden}, -0.2, 0.2, 2)},
      {"bn.weight", uniform({hidden}, 0.8, 1.6, 3)},
      {"bn.bias", uniform({hidden}, 0.0, 0.5, 4)},
      {"fc2.weight", uniform({kTrainClasses, hidden}, -1.0, 1.5, 5)},
      {"sn2.w", at::zeros({})},
  };
  std::vector<std::pair<std::string, at::Tensor>> buffers = {
      {"bn.running_mean", at::zeros({hidden})},
      {"bn.running_var", at::ones({hidden})},
  };
  nlohmann::json manifest = makeManifest({kTrainSteps, -1, kTrainFeatures},
                                         {-1, kTrainClasses}, false);
  for (auto &[name, value] : params) {
    b.addInitializer(name, value);
    manifest["parameters"].push_back(entry(name, value.sizes(), "parameter"));
  }
  for (auto &[name, value] : buffers) {
    b.addInitializer(name, value);
    manifest["parameters"].push_back(entry(name, value.sizes(), "buffer"));
  }
  std::string v = b.addNode("linear", {"input", "fc1.weight", "fc1.bias"});
  v = b.addNode("batch_norm", {v, "bn.weight", "bn.bias", "bn.running_mean",
                               "bn.running_var"});
  v = b.addNode("dropout", {v}, {floatAttr("p", 0.25f)});
  v = b.addNode("lif_node", {v},
                {floatAttr("v_threshold", 1.0f), floatAttr("v_reset", 0.0f),
                 floatAttr("tau", 2.0f)});
  v = b.addNode("linear", {v, "fc2.weight"});
  v = b.addNode("plif_node", {v, "sn2.w"},
                {floatAttr("v_threshold", 0.5f), intAttr("detach_reset", 1),
                 stringAttr("surrogate", "atan"), floatAttr("alpha", 2.0f)});
  b.addNode("mean_time", {v}, {}, "output");
  writeArtifact(dir, b, manifest);
}

void writeReadoutArtifact(const std::string &dir) {
  ProgramBuilder b;
  at::Tensor weight = at::full({kTrainClasses, kTrainFeatures}, 0.1);
  b.addInitializer("fc.weight", weight);
  nlohmann::json manifest = makeManifest({kTrainSteps, -1, kTrainFeatures},
                                         {-1, kTrainClasses}, false);
  manifest["parameters"].push_back(
      entry("fc.weight", weight.sizes(), "parameter"));
  std::string v = b.addNode("linear", {"input", "fc.weight"});
  b.addNode("mean_time", {v}, {}, "output");
  writeArtifact(dir, b, manifest);
}

runtime::Dataset makeStaticDataset(int64_t count, uint64_t seed) {
  runtime::Dataset data;
  data.name = "test-data";
  data.samples = at::rand({count, kTrainFeatures}, generator(seed));
  data.labels =
      at::randint(kTrainClasses, {count}, generator(seed + 1)).to(at::kLong);
  return data;
}

} // namespace snn::test
