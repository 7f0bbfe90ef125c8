//===- PipelineUnits.cpp - Stage units from module paths ------------------===//
#include "snn/Planner/PipelineUnits.h"

#include <algorithm>
#include <sstream>

namespace snn::planner {

namespace {

std::vector<std::string> pathComponents(const std::string &name) {
  std::vector<std::string> parts;
  std::stringstream stream(name);
  std::string part;
  while (std::getline(stream, part, '.'))
    parts.push_back(part);
  return parts;
}

/// ONNX names functional ops after their op type ("add", "mean_1"); modules have paths.
bool isModuleOp(const OpInfo &op) {
  return op.name.find('.') != std::string::npos || op.paramElements > 0 || isNeuron(op.kind);
}

/// Components every module op's path starts with (a top-level Sequential wrapper).
size_t sharedPrefixLength(const ModelInfo &model) {
  std::vector<std::vector<std::string>> paths;
  for (const OpInfo &op : model.ops)
    if (isModuleOp(op) && !op.name.empty())
      paths.push_back(pathComponents(op.name));
  if (paths.empty())
    return 0;
  size_t depth = 0;
  while (true) {
    for (const auto &path : paths)
      if (path.size() <= depth + 1 || path[depth] != paths.front()[depth])
        return depth;
    ++depth;
  }
}

/// The module paths no stage boundary may cut: each transformer block, the parent of a
/// spiking attention's module (`blocks.0` of `blocks.0.attn`). A block's residual stream and
/// its attention's heads stay on one stage.
std::vector<std::vector<std::string>> atomicBlocks(const ModelInfo &model) {
  std::vector<std::vector<std::string>> blocks;
  for (const OpInfo &op : model.ops) {
    if (op.kind != OpKind::SpikingAttention)
      continue;
    std::vector<std::string> path = pathComponents(op.name.substr(0, op.name.find('/')));
    if (path.size() >= 2) {
      path.pop_back();
      blocks.push_back(std::move(path));
    }
  }
  return blocks;
}

/// `depth`, or less where `path` lies inside an atomic block.
size_t keyDepth(const std::vector<std::string> &path, size_t depth,
                const std::vector<std::vector<std::string>> &blocks) {
  for (const auto &block : blocks)
    if (path.size() >= block.size() && std::equal(block.begin(), block.end(), path.begin()))
      depth = std::min(depth, block.size());
  return depth;
}

/// Units keyed by the first `depth` components of each module op's path.
std::vector<PipelineUnit> unitsAtDepth(const ModelInfo &model, size_t depth) {
  std::vector<std::vector<std::string>> blocks = atomicBlocks(model);
  std::vector<PipelineUnit> units;
  std::vector<int> pending; // functional ops before the first module
  for (size_t i = 0; i < model.ops.size(); ++i) {
    const OpInfo &op = model.ops[i];
    if (!isModuleOp(op) || op.name.empty()) {
      if (units.empty())
        pending.push_back(int(i));
      else
        units.back().ops.push_back(int(i));
      continue;
    }
    std::vector<std::string> path = pathComponents(op.name.substr(0, op.name.find('/')));
    std::string key;
    for (size_t c = 0, d = keyDepth(path, depth, blocks); c < d && c < path.size(); ++c)
      key += (c ? "." : "") + path[c];
    if (units.empty() || units.back().name != key)
      units.push_back({key, {}});
    if (!pending.empty()) {
      units.back().ops.insert(units.back().ops.end(), pending.begin(), pending.end());
      pending.clear();
    }
    units.back().ops.push_back(int(i));
  }
  if (!pending.empty())
    units.push_back({"model", pending});
  return units;
}

size_t deepestPath(const ModelInfo &model) {
  size_t deepest = 0;
  for (const OpInfo &op : model.ops)
    if (isModuleOp(op))
      deepest = std::max(deepest, pathComponents(op.name.substr(0, op.name.find('/'))).size());
  return deepest;
}

} // namespace

std::vector<PipelineUnit> pipelineUnits(const ModelInfo &model, int64_t minUnits) {
  size_t depth = sharedPrefixLength(model) + 1;
  std::vector<PipelineUnit> units = unitsAtDepth(model, depth);
  // Too few top-level blocks for the stages asked: split every block into its children
  // (a VGG's `features` into its layers, a residual block into its convs), level by level.
  for (size_t deepest = deepestPath(model); int64_t(units.size()) < minUnits && depth < deepest;)
    units = unitsAtDepth(model, ++depth);
  return units;
}

} // namespace snn::planner
