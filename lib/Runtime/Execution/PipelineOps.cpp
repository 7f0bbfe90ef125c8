//===- PipelineOps.cpp - recv and send: a pipeline stage's boundary -------===//
//
// The kernels only move tensors between the run and its StageBoundary; the
// transfers between ranks belong to the pipeline schedule (Pipeline/), which
// fills the boundary before a stage runs and sends what it left after.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Execution/NodeAttributes.h"
#include "snn/Runtime/Execution/OpRegistry.h"
#include "snn/Runtime/Execution/StageBoundary.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Schema/ArtifactOps.h"

namespace snn::runtime {

namespace attr = schema::attr;
namespace op = schema::op;

namespace {

using Inputs = std::vector<at::Tensor>;

/// A required non-negative int attribute (peer stage, slot).
int64_t requireIndex(const Node &node, const char *name) {
  NodeAttributes attributes(node);
  int64_t value = attributes.getInt(name);
  if (value < 0)
    attributes.fail("attribute '" + std::string(name) +
                    "' must be >= 0, got " + std::to_string(value));
  return value;
}

StageBoundary &boundaryOf(const RunContext &context, int64_t peer) {
  if (!context.boundary)
    throw Error("exchanges tensors with pipeline stage " + std::to_string(peer) +
                ", but this run is not a stage of a pipeline (a pp artifact's "
                "programs run under snn-run's pipeline schedule)");
  return *context.boundary;
}

Kernel buildRecv(const Node &node) {
  int64_t peer = requireIndex(node, attr::kPeer);
  int64_t slot = requireIndex(node, attr::kSlot);
  return [peer, slot](const Inputs &, const RunContext &context) {
    StageBoundary &boundary = boundaryOf(context, peer);
    auto it = boundary.received.find(slot);
    if (it == boundary.received.end() || !it->second.defined())
      throw Error("nothing was received from stage " + std::to_string(peer) +
                  " in slot " + std::to_string(slot));
    return it->second;
  };
}

Kernel buildSend(const Node &node) {
  int64_t peer = requireIndex(node, attr::kPeer);
  int64_t slot = requireIndex(node, attr::kSlot);
  return [peer, slot](const Inputs &in, const RunContext &context) {
    StageBoundary &boundary = boundaryOf(context, peer);
    if (!boundary.sent.emplace(slot, in[0]).second)
      throw Error("slot " + std::to_string(slot) + " to stage " +
                  std::to_string(peer) + " is sent twice");
    return at::Tensor();
  };
}

} // namespace

void registerPipelineOps(OpRegistry &registry) {
  registry.add(op::kRecv, buildRecv);
  registry.add(op::kSend, buildSend, /*outputs=*/0);
}

} // namespace snn::runtime
