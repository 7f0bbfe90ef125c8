//===- TestSupport.cpp - Temp dirs and tiny artifacts ---------------------===//

#include "TestSupport.h"
#include "snn/Runtime/Autograd/SpikeLinearAutograd.h"
#include "snn/Runtime/Kernels/SpikeConvKernels.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

namespace snn::test {

std::string errorOf(const std::function<void()> &body) {
  try {
    body();
  } catch (const runtime::Error &e) {
    return e.what();
  }
  return "";
}

double float32Gamma(int64_t terms) {
  double nEps = double(terms) * std::numeric_limits<float>::epsilon();
  return nEps / (1 - nEps);
}

void expectSameSumUpToOrder(const at::Tensor &actual,
                            const at::Tensor &expected,
                            const at::Tensor &magnitude, int64_t terms) {
  ASSERT_EQ(actual.sizes(), expected.sizes());
  at::Tensor bound = magnitude.to(at::kDouble) * (2 * float32Gamma(terms));
  at::Tensor difference =
      (actual.to(at::kDouble) - expected.to(at::kDouble)).abs();
  EXPECT_LE((difference - bound).max().item<double>(), 0.0)
      << "max difference " << difference.max().item<double>()
      << ", bound there "
      << bound.view({-1})[difference.view({-1}).argmax()].item<double>() << " ("
      << terms << " terms)";
}

namespace fs = std::filesystem;

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  fs::path path = fs::temp_directory_path() /
                  ("snn-runtime-test-" + std::to_string(::getpid()) + "-" +
                   std::to_string(counter++));
  fs::remove_all(path);
  fs::create_directories(path);
  dir = path.string();
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(dir, ec);
}

std::string TempDir::file(const std::string &name) const {
  return (fs::path(dir) / name).string();
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out)
    throw std::runtime_error("cannot write " + path);
}

onnx::AttributeProto floatAttr(const std::string &name, float value) {
  onnx::AttributeProto attribute;
  attribute.set_name(name);
  attribute.set_type(onnx::AttributeProto::FLOAT);
  attribute.set_f(value);
  return attribute;
}

onnx::AttributeProto intAttr(const std::string &name, int64_t value) {
  onnx::AttributeProto attribute;
  attribute.set_name(name);
  attribute.set_type(onnx::AttributeProto::INT);
  attribute.set_i(value);
  return attribute;
}

onnx::AttributeProto intsAttr(const std::string &name,
                              std::vector<int64_t> values) {
  onnx::AttributeProto attribute;
  attribute.set_name(name);
  attribute.set_type(onnx::AttributeProto::INTS);
  for (int64_t value : values)
    attribute.add_ints(value);
  return attribute;
}

onnx::AttributeProto stringAttr(const std::string &name,
                                const std::string &value) {
  onnx::AttributeProto attribute;
  attribute.set_name(name);
  attribute.set_type(onnx::AttributeProto::STRING);
  attribute.set_s(value);
  return attribute;
}

ProgramBuilder::ProgramBuilder() {
  proto.set_ir_version(8);
  proto.set_producer_name("snn-runtime-test");
  auto *graph = proto.mutable_graph();
  graph->set_name("program");
  auto *input = graph->add_input();
  input->set_name("input");
  input->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  graph->add_output()->set_name("output");
  // The opset comes after the graph in the serialised bytes, as in real files.
  auto *opset = proto.add_opset_import();
  opset->set_domain("spikemesh");
  opset->set_version(1);
}

void ProgramBuilder::addInitializer(const std::string &name,
                                    const at::Tensor &value, bool raw) {
  at::Tensor dense = value.contiguous();
  auto *tensor = proto.mutable_graph()->add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t dim : dense.sizes())
    tensor->add_dims(dim);
  const float *data = dense.data_ptr<float>();
  if (raw)
    tensor->set_raw_data(data, size_t(dense.numel()) * sizeof(float));
  else
    for (int64_t i = 0; i < dense.numel(); ++i)
      tensor->add_float_data(data[i]);
}

std::string
ProgramBuilder::addNode(const std::string &opType,
                        const std::vector<std::string> &inputs,
                        const std::vector<onnx::AttributeProto> &attributes,
                        const std::string &output) {
  auto *node = proto.mutable_graph()->add_node();
  std::string result =
      output.empty() ? "v" + std::to_string(nextValue++) : output;
  node->set_name("layer" + std::to_string(proto.graph().node_size() - 1));
  node->set_op_type(opType);
  node->set_domain("spikemesh");
  for (const std::string &input : inputs)
    node->add_input(input);
  node->add_output(result);
  for (const auto &attribute : attributes)
    *node->add_attribute() = attribute;
  return result;
}

void ProgramBuilder::addSink(const std::string &opType,
                             const std::vector<std::string> &inputs,
                             const std::vector<onnx::AttributeProto> &attributes) {
  auto *node = proto.mutable_graph()->add_node();
  node->set_name("layer" + std::to_string(proto.graph().node_size() - 1));
  node->set_op_type(opType);
  node->set_domain("spikemesh");
  for (const std::string &input : inputs)
    node->add_input(input);
  for (const auto &attribute : attributes)
    *node->add_attribute() = attribute;
}

void ProgramBuilder::dropGraphInput() { proto.mutable_graph()->clear_input(); }

void ProgramBuilder::dropGraphOutput() { proto.mutable_graph()->clear_output(); }

void ProgramBuilder::declareShape(const std::string &value,
                                  const std::vector<int64_t> &shape) {
  auto *info = proto.mutable_graph()->add_value_info();
  info->set_name(value);
  auto *type = info->mutable_type()->mutable_tensor_type();
  type->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t dim : shape) {
    auto *d = type->mutable_shape()->add_dim();
    if (dim >= 0)
      d->set_dim_value(dim);
    else
      d->set_dim_param("N");
  }
}

std::string ProgramBuilder::serialize() const {
  std::string bytes;
  proto.SerializeToString(&bytes);
  return bytes;
}

nlohmann::json makeManifest(const std::vector<int64_t> &inputShape,
                            const std::vector<int64_t> &outputShape,
                            bool outputTimeMajor) {
  return {
      {"format", "spikemesh-artifact"},
      {"version", 1},
      {"producer", "snn-runtime-test"},
      {"source", "test"},
      {"world_size", 1},
      {"mesh", {{"axes", nlohmann::json::array()},
                {"shape", nlohmann::json::array()}}},
      {"programs", {{{"file", "program_0.onnx"}, {"ranks", {0}}}}},
      {"input", {{"name", "input"}, {"shape", inputShape}, {"time_major", true}}},
      {"output",
       {{"name", "output"},
        {"shape", outputShape},
        {"time_major", outputTimeMajor}}},
      {"parameters", nlohmann::json::array()},
      {"plan", {{"mode", "none"}}},
  };
}

void writeArtifact(const std::string &dir, const ProgramBuilder &program,
                   const nlohmann::json &manifest) {
  fs::create_directories(dir);
  writeFile((fs::path(dir) / "manifest.json").string(), manifest.dump(2));
  writeFile((fs::path(dir) / "program_0.onnx").string(), program.serialize());
}

DenseKernels::DenseKernels()
    : linear(runtime::spikeLinearMaxDensity()), conv(runtime::spikeConvMaxDensity()) {
  runtime::setSpikeLinearMaxDensity(0.0);
  runtime::setSpikeConvMaxDensity(0.0);
}

DenseKernels::~DenseKernels() {
  runtime::setSpikeLinearMaxDensity(linear);
  runtime::setSpikeConvMaxDensity(conv);
}

} // namespace snn::test
