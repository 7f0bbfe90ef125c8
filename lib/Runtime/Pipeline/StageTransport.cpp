//===- StageTransport.cpp - Boundary tensors between pipeline stages ------===//

#include "snn/Runtime/Pipeline/StageTransport.h"
#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Execution/Model.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/TensorIO.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cstring>

namespace snn::runtime {

namespace {

constexpr int kActivation = 0, kGradient = 1;

/// Per local stage: [stage, recv count, send count, then per recv: rank,
/// dims...].
std::vector<int64_t> encodeInterfaces(const Model &model) {
  std::vector<int64_t> table;
  for (int64_t stage : model.stages()) {
    const StageInterface &face = model.stageInterface(stage);
    table.insert(table.end(), {stage, int64_t(face.recvs.size()), int64_t(face.sends.size())});
    for (const BoundarySlot &recv : face.recvs) {
      table.push_back(int64_t(recv.shape.size()));
      table.insert(table.end(), recv.shape.begin(), recv.shape.end());
    }
  }
  return table;
}

at::Tensor longTensor(const std::vector<int64_t> &values, int64_t length) {
  at::Tensor t = at::full({length}, -1, at::kLong);
  std::memcpy(t.data_ptr<int64_t>(), values.data(), values.size() * sizeof(int64_t));
  return t;
}

} // namespace

at::Tensor StageTransport::Incoming::wait() {
  if (!local) {
    transfer.wait();
    return transfer.tensor();
  }
  auto it = local->handoffs.find(key);
  if (it == local->handoffs.end())
    throw Error("pipeline: stage " + std::to_string(std::get<1>(key)) +
                " waits for a tensor no stage handed over (microbatch " +
                std::to_string(std::get<2>(key)) + ", slot " +
                std::to_string(std::get<3>(key)) + ")");
  at::Tensor value = std::move(it->second);
  local->handoffs.erase(it);
  return value;
}

StageTransport::StageTransport(const Model &model, const PipelineLayout &layout,
                               const dist::Group *group)
    : layout(layout),
      group(group && group->valid() && group->size() > 1 ? group : nullptr),
      recvShapes(size_t(layout.stageCount)), sendCounts(size_t(layout.stageCount), 0) {
  if (this->group)
    exchangeInterfaces(model);
  else
    readLocalInterfaces(model);
  checkAgreement();
  for (const auto &recvs : recvShapes)
    maxSlots = std::max<int64_t>(maxSlots, int64_t(recvs.size()));
  if (2 * layout.stageCount * std::max<int64_t>(layout.microbatches, 1) * maxSlots >=
      dist::kMaxTransferTag)
    throw Error("pipeline: " + std::to_string(layout.stageCount) + " stages x " +
                std::to_string(layout.microbatches) + " microbatches x " +
                std::to_string(maxSlots) + " slots are too many transfers to tag");
}

void StageTransport::readLocalInterfaces(const Model &model) {
  for (int64_t stage : model.stages()) {
    const StageInterface &face = model.stageInterface(stage);
    recvShapes[size_t(stage)] = face.recvs;
    sendCounts[size_t(stage)] = face.sends.size();
  }
}

/// Collective over the pp group: every member's encodeInterfaces, padded to
/// the longest, all-gathered and read back.
void StageTransport::exchangeInterfaces(const Model &model) {
  std::vector<int64_t> mine = encodeInterfaces(model);
  at::Tensor length = longTensor({int64_t(mine.size())}, 1);
  dist::allReduce(*group, length, dist::ReduceOp::Max);
  int64_t width = length.item<int64_t>();
  at::Tensor all = dist::allGather(*group, longTensor(mine, width));
  const int64_t *data = all.data_ptr<int64_t>();
  for (int member = 0; member < group->size(); ++member) {
    const int64_t *at = data + int64_t(member) * width, *end = at + width;
    while (at < end && *at >= 0) {
      int64_t stage = at[0], recvs = at[1];
      sendCounts[size_t(stage)] = size_t(at[2]);
      at += 3;
      for (int64_t slot = 0; slot < recvs; ++slot) {
        BoundarySlot recv;
        recv.slot = slot;
        recv.peer = stage - 1;
        recv.node = "slot " + std::to_string(slot);
        recv.shape.assign(at + 1, at + 1 + at[0]);
        at += 1 + at[0];
        recvShapes[size_t(stage)].push_back(std::move(recv));
      }
    }
  }
  // This rank's own stages keep their node names, for messages.
  readLocalInterfaces(model);
}

void StageTransport::checkAgreement() const {
  for (int64_t stage = 0; stage + 1 < layout.stageCount; ++stage)
    if (sendCounts[size_t(stage)] != recvShapes[size_t(stage) + 1].size())
      throw Error("pipeline stage " + std::to_string(stage) + " sends " +
                  std::to_string(sendCounts[size_t(stage)]) + " tensors, but stage " +
                  std::to_string(stage + 1) + " receives " +
                  std::to_string(recvShapes[size_t(stage) + 1].size()));
}

int64_t StageTransport::tagOf(const Key &key) const {
  auto [direction, stage, microbatch, slot] = key;
  int64_t microbatches = std::max<int64_t>(layout.microbatches, 1);
  return ((direction * layout.stageCount + stage) * microbatches + microbatch) * maxSlots +
         slot;
}

void StageTransport::send(const Key &key, int64_t toStage, const at::Tensor &value) {
  if (!group) {
    handoffs[key] = value.detach();
    return;
  }
  sends.emplace(key, dist::isend(*group, value.detach(), peerOf(toStage), tagOf(key)));
}

StageTransport::Incoming StageTransport::receive(const Key &key, int64_t fromStage,
                                                 const std::vector<int64_t> &shape) {
  Incoming incoming;
  incoming.key = key;
  if (!group) {
    incoming.local = this;
    return incoming;
  }
  // Gloo fills the buffer on its own thread: a normal tensor, also in eval.
  c10::InferenceMode normal(false);
  incoming.transfer =
      dist::irecv(*group, at::empty(shape, at::kFloat), peerOf(fromStage), tagOf(key));
  return incoming;
}

void StageTransport::sendActivation(int64_t stage, int64_t microbatch, int64_t slot,
                                    int64_t samples, const at::Tensor &value) {
  const BoundarySlot &recv = recvShapes[size_t(stage) + 1][size_t(slot)];
  std::vector<int64_t> expected = recvShape(recv, samples);
  std::string what = "pipeline stage " + std::to_string(stage) + " sends slot " +
                     std::to_string(slot);
  if (value.scalar_type() != at::kFloat)
    throw Error(what + " as " + std::string(c10::toString(value.scalar_type())) +
                ", not float32");
  if (value.sizes() != at::IntArrayRef(expected))
    throw Error(what + " of shape " + formatShape(value.sizes()) + ", but stage " +
                std::to_string(stage + 1) + "'s recv (" + recv.node + ") declares " +
                formatShape(expected));
  send({kActivation, stage + 1, microbatch, slot}, stage + 1, value);
}

StageTransport::Incoming StageTransport::receiveActivation(int64_t stage,
                                                           int64_t microbatch,
                                                           int64_t slot, int64_t samples) {
  std::vector<int64_t> shape = recvShape(recvShapes[size_t(stage)][size_t(slot)], samples);
  return receive({kActivation, stage, microbatch, slot}, stage - 1, shape);
}

void StageTransport::sendGradient(int64_t stage, int64_t microbatch, int64_t slot,
                                  const at::Tensor &grad) {
  send({kGradient, stage - 1, microbatch, slot}, stage - 1, grad);
}

StageTransport::Incoming StageTransport::receiveGradient(int64_t stage,
                                                         int64_t microbatch,
                                                         int64_t slot, int64_t samples) {
  std::vector<int64_t> shape =
      recvShape(recvShapes[size_t(stage) + 1][size_t(slot)], samples);
  return receive({kGradient, stage, microbatch, slot}, stage + 1, shape);
}

void StageTransport::releaseActivationSends(int64_t stage, int64_t microbatch) {
  for (size_t slot = 0; slot < sendCount(stage); ++slot) {
    auto it = sends.find({kActivation, stage + 1, microbatch, int64_t(slot)});
    if (it == sends.end())
      continue;
    it->second.wait();
    sends.erase(it);
  }
}

void StageTransport::finishSends() {
  std::map<Key, dist::PendingTransfer> pending;
  pending.swap(sends);
  for (auto &[key, send] : pending)
    send.wait();
  handoffs.clear();
}

} // namespace snn::runtime
