//===- OpRegistry.cpp - op_type -> kernel builder -------------------------===//

#include "snn/Runtime/Execution/OpRegistry.h"
#include "snn/Schema/ArtifactOps.h"

#include <stdexcept>

namespace snn::runtime {

void OpRegistry::add(const char *opType, KernelBuilder build, int outputs,
                     OutputStorage storage) {
  const schema::ArtifactOp *op = schema::findArtifactOp(opType);
  if (!op)
    throw std::logic_error(std::string("op '") + opType +
                           "' is not in the artifact op table");
  ops[opType] = OpDef{op->minInputs, op->maxInputs, outputs, std::move(build),
                      storage == OutputStorage::MayViewInput};
}

const OpDef *OpRegistry::lookup(const std::string &opType) const {
  auto it = ops.find(opType);
  return it == ops.end() ? nullptr : &it->second;
}

std::vector<std::string> OpRegistry::opTypes() const {
  std::vector<std::string> names;
  for (const auto &entry : ops)
    names.push_back(entry.first);
  return names;
}

const OpRegistry &OpRegistry::builtin() {
  static const OpRegistry registry = [] {
    OpRegistry result;
    registerLayerOps(result);
    registerPerStepShapeOps(result);
    registerAttentionOps(result);
    registerNeuronOps(result);
    registerDescribedNeuronOps(result);
    registerParallelNeuronOps(result);
    registerCollectiveOps(result);
    registerPipelineOps(result);
    return result;
  }();
  return registry;
}

} // namespace snn::runtime
