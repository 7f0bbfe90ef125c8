//===- StageInterface.cpp - A pipeline stage program's boundary -----------===//

#include "snn/Runtime/Execution/StageInterface.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/TensorIO.h"
#include "snn/Schema/ArtifactOps.h"

#include <algorithm>

namespace snn::runtime {

namespace attr = schema::attr;
namespace op = schema::op;

namespace {

bool contains(const std::vector<std::string> &list, const std::string &name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

/// An int attribute of a boundary node (the kernels report a missing one
/// with the same words; here the file is named too).
int64_t intAttribute(const Graph &program, const Node &node, const char *name) {
  auto it = node.attributes.find(name);
  if (it == node.attributes.end() || it->second.kind != Attribute::Kind::Int)
    throw Error(program.file + ": " + node.describe() +
                ": needs an int attribute '" + name + "'");
  return it->second.i;
}

/// The declared [T, n, ...] shape of a recv's output.
std::vector<int64_t> declaredShape(const Graph &program, const Node &node) {
  std::string where = program.file + ": " + node.describe();
  auto it = node.outputs.empty() ? program.valueShapes.end()
                                 : program.valueShapes.find(node.outputs[0]);
  if (it == program.valueShapes.end())
    throw Error(where + ": its output has no declared shape (value_info); the "
                        "receiver allocates the tensor before it arrives");
  const std::vector<int64_t> &shape = it->second;
  bool fixed = shape.size() >= 2;
  for (size_t d = 0; d < shape.size(); ++d)
    fixed = fixed && (shape[d] >= 0 || d == 1);
  if (!fixed)
    throw Error(where + ": its output's declared shape " + formatShape(shape) +
                " is not [T, n, ...] with fixed sizes except n");
  return shape;
}

/// Slots must be 0, 1, ... once each; sorts `slots` by slot.
void checkSlots(const Graph &program, std::vector<BoundarySlot> &slots,
                const char *what) {
  std::sort(slots.begin(), slots.end(),
            [](const BoundarySlot &a, const BoundarySlot &b) { return a.slot < b.slot; });
  for (size_t i = 0; i < slots.size(); ++i)
    if (slots[i].slot != int64_t(i))
      throw Error(program.file + ": " + what + " node '" + slots[i].node +
                  "' has slot " + std::to_string(slots[i].slot) +
                  "; the stage's " + what + " slots must be 0 to " +
                  std::to_string(slots.size() - 1) + ", once each");
}

void checkGraphBoundary(const Graph &program, StageInterface &stage,
                        int64_t count, const std::string &inputName,
                        const std::string &outputName) {
  std::string where = program.file + ": pipeline stage " +
                      std::to_string(stage.stage) + " of " + std::to_string(count);
  stage.hasInput = contains(program.inputs, inputName);
  stage.hasOutput = contains(program.outputs, outputName);
  bool first = stage.stage == 0, last = stage.stage == count - 1;
  if (first != stage.hasInput || (first && program.inputs.size() != 1) ||
      (!first && !program.inputs.empty()))
    throw Error(where + (first ? " must have exactly the graph input '" + inputName + "'"
                               : " must have no graph input (it receives its values)"));
  if (last != stage.hasOutput || (!last && !program.outputs.empty()))
    throw Error(where + (last ? " must have the graph output '" + outputName + "'"
                              : " must have no graph output (it sends its values)"));
  if (!first && stage.recvs.empty())
    throw Error(where + " receives nothing from stage " + std::to_string(stage.stage - 1));
  if (!last && stage.sends.empty())
    throw Error(where + " sends nothing to stage " + std::to_string(stage.stage + 1));
}

} // namespace

StageInterface readStageInterface(const Graph &program, int64_t stage,
                                  int64_t count, const std::string &inputName,
                                  const std::string &outputName) {
  StageInterface result;
  result.stage = stage;
  for (const Node &node : program.nodes) {
    bool recv = node.opType == op::kRecv, send = node.opType == op::kSend;
    if (!recv && !send)
      continue;
    BoundarySlot slot;
    slot.node = node.name;
    slot.slot = intAttribute(program, node, attr::kSlot);
    slot.peer = intAttribute(program, node, attr::kPeer);
    int64_t expected = recv ? stage - 1 : stage + 1;
    if (expected < 0 || expected >= count)
      throw Error(program.file + ": " + node.describe() + ": stage " +
                  std::to_string(stage) + " of " + std::to_string(count) +
                  (recv ? " has no stage before it to receive from"
                        : " has no stage after it to send to"));
    if (slot.peer != expected)
      throw Error(program.file + ": " + node.describe() + " of stage " +
                  std::to_string(stage) + " names peer stage " +
                  std::to_string(slot.peer) + ", not " + std::to_string(expected) +
                  " (only adjacent stages exchange tensors)");
    if (recv)
      slot.shape = declaredShape(program, node);
    (recv ? result.recvs : result.sends).push_back(std::move(slot));
  }
  checkSlots(program, result.recvs, "recv");
  checkSlots(program, result.sends, "send");
  checkGraphBoundary(program, result, count, inputName, outputName);
  return result;
}

std::vector<int64_t> recvShape(const BoundarySlot &recv, int64_t samples) {
  std::vector<int64_t> shape = recv.shape;
  if (shape[1] >= 0 && shape[1] != samples)
    throw Error("recv node '" + recv.node + "' declares " +
                std::to_string(shape[1]) + " samples, but a microbatch has " +
                std::to_string(samples));
  shape[1] = samples;
  return shape;
}

} // namespace snn::runtime
