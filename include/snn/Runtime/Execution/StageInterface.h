//===- StageInterface.h - A pipeline stage program's boundary ---*- C++ -*-===//
//
// What a logical stage's program (docs/artifact-format.md, "Pipeline
// programs") receives from stage k - 1 and sends to stage k + 1: its recv and
// send nodes by slot, with the shape each recv declares (its buffer is
// allocated before the data arrives). Reading it checks the program against
// the contract, so a malformed stage fails at load time, naming the node,
// instead of hanging a transfer.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_STAGEINTERFACE_H
#define SNN_RUNTIME_EXECUTION_STAGEINTERFACE_H

#include "snn/Runtime/Execution/Graph.h"

#include <cstdint>
#include <string>
#include <vector>

namespace snn::runtime {

/// One recv or send node.
struct BoundarySlot {
  int64_t slot = 0;
  int64_t peer = 0;
  std::string node; // its name, for messages
  /// recv: the declared shape of its output, [T, n, ...], where dimension 1
  /// (the microbatch) may be -1; send: empty (the receiver declares it).
  std::vector<int64_t> shape;
};

struct StageInterface {
  int64_t stage = -1;
  bool hasInput = false;  // the graph input (stage 0)
  bool hasOutput = false; // the graph output (the last stage)
  /// Sorted by slot, numbered 0, 1, ... each.
  std::vector<BoundarySlot> recvs;
  std::vector<BoundarySlot> sends;
};

/// Reads and checks the boundary of `program`, logical stage `stage` of
/// `count`: stage 0 alone has the graph input `inputName` (and no recv), the
/// last alone the graph output `outputName` (and no send); every other stage
/// receives from stage - 1 and sends to stage + 1 (`peer`), with slots
/// numbered 0, 1, ... once each; every recv declares its output's shape, of
/// rank >= 2 with fixed sizes except dimension 1. Throws Error naming the
/// file and the node.
StageInterface readStageInterface(const Graph &program, int64_t stage,
                                  int64_t count, const std::string &inputName,
                                  const std::string &outputName);

/// A recv's buffer shape for a microbatch of `samples`: the declared shape
/// with dimension 1 set. Throws Error naming the node when the declared size
/// is fixed and differs.
std::vector<int64_t> recvShape(const BoundarySlot &recv, int64_t samples);

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_STAGEINTERFACE_H
