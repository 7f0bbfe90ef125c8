//===- OnnxExport.cpp - Trained weights back into the program ONNX --------===//

#include "snn/Runtime/Checkpoint/OnnxExport.h"
#include "snn/Runtime/Support/DurableFile.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/Npy.h"

#include "snn/Schema/ArtifactOps.h"

#include <onnx/onnx_pb.h>

#include <map>
#include <set>
#include <stdexcept>

namespace snn::runtime {

namespace {

void replaceInitializer(onnx::TensorProto &proto, const at::Tensor &value) {
  at::Tensor dense = value.detach().to(at::kFloat).contiguous();
  proto.clear_dims();
  for (int64_t dim : dense.sizes())
    proto.add_dims(dim);
  proto.set_data_type(onnx::TensorProto::FLOAT);
  proto.clear_float_data();
  proto.set_raw_data(dense.data_ptr<float>(),
                     size_t(dense.numel()) * sizeof(float));
}

onnx::ModelProto readModel(const std::string &path) {
  onnx::ModelProto model;
  if (!model.ParseFromString(readWholeFile(path)))
    throw Error(path + ": not a valid ONNX model");
  return model;
}

/// Stage k's nodes appended to `whole`, renamed; its recv outputs become the
/// previous stage's sent values (`sent`, by slot), which its own sends then
/// replace.
void appendStage(onnx::GraphProto &whole, const onnx::GraphProto &stage, int64_t k,
                 bool last, const std::string &inputName, const std::string &outputName,
                 std::map<int64_t, std::string> &sent) {
  std::set<std::string> keep;
  for (const auto &initializer : stage.initializer())
    keep.insert(initializer.name());
  if (k == 0)
    keep.insert(inputName);
  if (last)
    keep.insert(outputName);
  std::map<std::string, std::string> alias;
  auto rename = [&](const std::string &name) {
    auto it = alias.find(name);
    if (it != alias.end())
      return it->second;
    return name.empty() || keep.count(name) ? name : "s" + std::to_string(k) + "/" + name;
  };
  std::map<int64_t, std::string> sending;
  for (const onnx::NodeProto &node : stage.node()) {
    int64_t slot = -1;
    for (const auto &attribute : node.attribute())
      if (attribute.name() == schema::attr::kSlot)
        slot = attribute.i();
    if (node.op_type() == schema::op::kRecv) {
      alias[node.output(0)] = sent.at(slot);
    } else if (node.op_type() == schema::op::kSend) {
      sending[slot] = rename(node.input(0));
    } else {
      onnx::NodeProto *copy = whole.add_node();
      *copy = node;
      for (std::string &input : *copy->mutable_input())
        input = rename(input);
      for (std::string &output : *copy->mutable_output())
        output = rename(output);
    }
  }
  for (const auto &initializer : stage.initializer())
    *whole.add_initializer() = initializer;
  sent = std::move(sending);
}

void writeWithWeights(onnx::ModelProto &model, const ParameterStore &store,
                      const std::string &outPath) {
  for (onnx::TensorProto &initializer :
       *model.mutable_graph()->mutable_initializer())
    if (store.contains(initializer.name()))
      replaceInitializer(initializer, store.get(initializer.name()));
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    throw Error("--export-onnx " + outPath + ": cannot serialise the model");
  writeFileAtomically(outPath, bytes);
}

} // namespace

void exportTrainedOnnx(const std::string &programPath,
                       const ParameterStore &store,
                       const std::string &outPath) {
  onnx::ModelProto model = readModel(programPath);
  writeWithWeights(model, store, outPath);
}

void exportTrainedPipelineOnnx(const std::vector<std::string> &stagePaths,
                               const std::string &inputName,
                               const std::string &outputName,
                               const ParameterStore &store, const std::string &outPath) {
  onnx::ModelProto whole = readModel(stagePaths.front());
  onnx::GraphProto &graph = *whole.mutable_graph();
  graph.clear_node();
  graph.clear_initializer();
  graph.clear_value_info();
  graph.clear_output();
  std::map<int64_t, std::string> sent;
  for (size_t k = 0; k < stagePaths.size(); ++k) {
    onnx::ModelProto stage = readModel(stagePaths[k]);
    bool last = k + 1 == stagePaths.size();
    try {
      appendStage(graph, stage.graph(), int64_t(k), last, inputName, outputName, sent);
    } catch (const std::out_of_range &) {
      throw Error(stagePaths[k] + ": a recv slot that stage " + std::to_string(k - 1) +
                  " does not send");
    }
    if (last)
      *graph.mutable_output() = stage.graph().output();
  }
  writeWithWeights(whole, store, outPath);
}

} // namespace snn::runtime
