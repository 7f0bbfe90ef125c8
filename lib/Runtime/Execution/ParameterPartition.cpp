//===- ParameterPartition.cpp - Split parameters and this rank's parts ----===//

#include "snn/Runtime/Execution/ParameterPartition.h"
#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/TensorIO.h"

#include <ATen/core/grad_mode.h>
#include <ATen/ops/cat.h>

namespace snn::runtime {

ParameterPartition::ParameterPartition(const Manifest &manifest,
                                       const MeshContext &mesh)
    : mesh(&mesh) {
  for (const ParameterSpec &parameter : manifest.parameters)
    if (parameter.isSplit())
      split.emplace(parameter.name, parameter);
}

const ParameterSpec *ParameterPartition::splitOf(const std::string &name) const {
  auto it = split.find(name);
  return it == split.end() ? nullptr : &it->second;
}

std::vector<int64_t>
ParameterPartition::localShape(const std::string &name,
                               std::vector<int64_t> whole) const {
  const ParameterSpec *spec = splitOf(name);
  if (!spec)
    return whole;
  return spec->localShape(mesh->axisSize(spec->meshAxis));
}

at::Tensor ParameterPartition::localPart(const std::string &name,
                                         const at::Tensor &whole,
                                         const std::string &where) const {
  const ParameterSpec *spec = splitOf(name);
  if (!spec)
    return whole;
  int64_t parts = mesh->axisSize(spec->meshAxis);
  if (whole.sizes() != at::IntArrayRef(spec->shape))
    throw Error(where + ": parameter '" + name + "' has shape " +
                formatShape(whole.sizes()) + " there, but this artifact splits " +
                formatShape(spec->shape) + " along dimension " +
                std::to_string(spec->splitDim) + " over mesh axis '" +
                spec->meshAxis + "' (every rank holds a part of the whole)");
  // Each of the split dimension's blocks (one, or a fused projection's q, k and v) gives
  // this rank its own piece; the pieces follow one another in block order.
  int64_t dim = spec->splitDim, groups = spec->splitGroups;
  int64_t block = spec->shape[size_t(dim)] / groups, length = block / parts;
  int64_t start = length * mesh->coordinate(spec->meshAxis);
  std::vector<at::Tensor> pieces;
  for (int64_t g = 0; g < groups; ++g)
    pieces.push_back(whole.narrow(dim, g * block + start, length));
  return groups == 1 ? pieces.front().contiguous().clone() : at::cat(pieces, dim);
}

at::Tensor ParameterPartition::gatherWhole(const std::string &name,
                                           const at::Tensor &local) const {
  const ParameterSpec *spec = splitOf(name);
  if (!spec || mesh->axisSize(spec->meshAxis) == 1)
    return local;
  at::NoGradGuard noGrad;
  int64_t dim = spec->splitDim;
  // allGather concatenates along dim 0 in group-rank order, which is the
  // coordinate order on the axis: [member, block, piece] rows, reordered to
  // [block, member, piece] for a split of several blocks.
  at::Tensor rows = local.detach().transpose(0, dim).contiguous();
  at::Tensor all = dist::allGather(mesh->group(spec->meshAxis), rows);
  if (int64_t groups = spec->splitGroups; groups > 1) {
    int64_t parts = mesh->axisSize(spec->meshAxis);
    std::vector<int64_t> blocked{parts, groups, rows.size(0) / groups};
    blocked.insert(blocked.end(), rows.sizes().begin() + 1, rows.sizes().end());
    all = all.view(blocked).transpose(0, 1).reshape(all.sizes());
  }
  return all.transpose(0, dim).contiguous();
}

ParameterStore ParameterPartition::wholeStore(const ParameterStore &store) const {
  std::vector<ParameterStore::Entry> entries;
  for (const ParameterStore::Entry &entry : store.entries())
    entries.push_back(
        {entry.name, entry.kind, gatherWhole(entry.name, entry.tensor).detach()});
  return ParameterStore(std::move(entries));
}

} // namespace snn::runtime
