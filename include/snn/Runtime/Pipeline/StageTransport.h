//===- StageTransport.h - Boundary tensors between pipeline stages -*- C++ -*-===//
//
// Moves what crosses a stage boundary (docs/artifact-format.md, "Pipeline
// programs"): forward, stage k's send slot i becomes stage k + 1's recv slot
// i; backward, the gradient of stage k + 1's recv slot i becomes the
// gradient of stage k's send slot i. Between ranks these are asynchronous
// transfers over the pp axis' group, tagged by direction, receiving stage,
// microbatch and slot, so they match whatever order the two ranks post them
// in; between two stages of one process (a pp axis of one) the tensor is
// handed over directly.
//
// Every receive buffer is allocated from the shape the receiving recv node
// declares; the transport learns every stage's recv shapes when it is
// created (collective over the pp group) and checks each send against them,
// so a mismatch is an error naming the stage and slot, never a transfer of
// the wrong size.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_PIPELINE_STAGETRANSPORT_H
#define SNN_RUNTIME_PIPELINE_STAGETRANSPORT_H

#include "snn/Runtime/Distributed/PointToPoint.h"
#include "snn/Runtime/Execution/PipelineLayout.h"
#include "snn/Runtime/Execution/StageInterface.h"

#include <ATen/core/Tensor.h>

#include <map>
#include <tuple>
#include <vector>

namespace snn::runtime {

class Model;

class StageTransport {
public:
  /// Direction, receiving stage, microbatch, slot.
  using Key = std::tuple<int, int64_t, int64_t, int64_t>;

  /// A tensor on its way: a posted receive, or a handoff within the process.
  class Incoming {
  public:
    /// Blocks until it is there (the group's timeout; a lost peer is a
    /// DistributedError naming it).
    at::Tensor wait();

  private:
    friend class StageTransport;
    dist::PendingTransfer transfer;
    StageTransport *local = nullptr;
    Key key;
  };

  /// `group`: the pp axis' group, null when the axis has one member (every
  /// stage in this process). With a group this is collective over it: every
  /// rank learns every stage's recv slots and shapes, and each stage must
  /// send exactly as many tensors as the next one receives (Error naming
  /// both stages otherwise).
  StageTransport(const Model &model, const PipelineLayout &layout,
                 const dist::Group *group);

  /// Starts handing `value`, stage `stage`'s send slot `slot` of microbatch
  /// `microbatch` (of `samples` samples), to stage + 1. Error if its shape
  /// is not what the receiving recv node declares.
  void sendActivation(int64_t stage, int64_t microbatch, int64_t slot,
                      int64_t samples, const at::Tensor &value);
  /// Posts the receive of stage `stage`'s recv slot `slot` (from stage - 1).
  Incoming receiveActivation(int64_t stage, int64_t microbatch, int64_t slot,
                             int64_t samples);
  /// Starts handing the gradient of stage `stage`'s recv slot to stage - 1.
  void sendGradient(int64_t stage, int64_t microbatch, int64_t slot,
                    const at::Tensor &grad);
  /// Posts the receive of the gradient of stage `stage`'s send slot.
  Incoming receiveGradient(int64_t stage, int64_t microbatch, int64_t slot,
                           int64_t samples);
  /// Stage `stage`'s activations of `microbatch` have been received once their
  /// gradients are back: waits for those sends (done by then) and drops their
  /// tensors, so that a rank holds the sends of its microbatches in flight
  /// only, not of the whole step.
  void releaseActivationSends(int64_t stage, int64_t microbatch);
  /// Waits until every send started has been received.
  void finishSends();

  /// How many tensors stage `stage` receives and sends (any stage).
  size_t recvCount(int64_t stage) const { return recvShapes[size_t(stage)].size(); }
  size_t sendCount(int64_t stage) const { return sendCounts[size_t(stage)]; }

private:
  void exchangeInterfaces(const Model &model);
  void readLocalInterfaces(const Model &model);
  void checkAgreement() const;
  int64_t tagOf(const Key &key) const;
  int peerOf(int64_t stage) const { return int(layout.coordinateOf(stage)); }
  void send(const Key &key, int64_t toStage, const at::Tensor &value);
  Incoming receive(const Key &key, int64_t fromStage,
                   const std::vector<int64_t> &shape);

  PipelineLayout layout;
  const dist::Group *group;
  /// Per stage: each recv slot's declared shape ([T, -1, ...]).
  std::vector<std::vector<BoundarySlot>> recvShapes;
  std::vector<size_t> sendCounts;
  int64_t maxSlots = 1;
  std::map<Key, dist::PendingTransfer> sends;
  /// Handoffs within the process, until the receiving stage takes them.
  std::map<Key, at::Tensor> handoffs;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_PIPELINE_STAGETRANSPORT_H
