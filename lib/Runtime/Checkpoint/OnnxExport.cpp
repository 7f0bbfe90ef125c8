//===- OnnxExport.cpp - Trained weights back into the program ONNX --------===//

#include "snn/Runtime/Checkpoint/OnnxExport.h"
#include "snn/Runtime/Support/DurableFile.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/Npy.h"

#include <onnx/onnx_pb.h>

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

} // namespace

void exportTrainedOnnx(const std::string &programPath,
                       const ParameterStore &store,
                       const std::string &outPath) {
  onnx::ModelProto model;
  if (!model.ParseFromString(readWholeFile(programPath)))
    throw Error(programPath + ": not a valid ONNX model");
  for (onnx::TensorProto &initializer :
       *model.mutable_graph()->mutable_initializer())
    if (store.contains(initializer.name()))
      replaceInitializer(initializer, store.get(initializer.name()));
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    throw Error("--export-onnx " + outPath + ": cannot serialise the model");
  writeFileAtomically(outPath, bytes);
}

} // namespace snn::runtime
