//===- FlatParameterGroup.cpp - Parameters as views of one buffer ---------===//

#include "snn/Runtime/Sharding/FlatParameterGroup.h"
#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/core/grad_mode.h>
#include <ATen/ops/zeros.h>
#include <c10/core/StorageImpl.h>

namespace snn::runtime {

namespace {

std::vector<int64_t> numelsOf(const std::vector<at::Tensor> &params) {
  std::vector<int64_t> numels;
  for (const at::Tensor &param : params) {
    if (param.scalar_type() != at::kFloat)
      throw Error("sharded training supports float32 parameters only");
    numels.push_back(param.numel());
  }
  return numels;
}

} // namespace

FlatParameterGroup::FlatParameterGroup(std::vector<at::Tensor> params,
                                       int ranks, int rank)
    : shardLayout(numelsOf(params), ranks), tensors(std::move(params)),
      pieces(shardLayout.piecesOf(rank)), ownRank(rank) {
  at::NoGradGuard noGrad;
  buffer = at::zeros({shardLayout.paddedTotal()}, at::kFloat);
  for (size_t i = 0; i < tensors.size(); ++i) {
    at::Tensor view = buffer.narrow(0, shardLayout.offsetOf(i), tensors[i].numel())
                          .view(tensors[i].sizes());
    view.copy_(tensors[i]);
    tensors[i].set_data(view);
  }
}

at::Tensor FlatParameterGroup::ownChunk() const {
  return buffer.narrow(0, chunkStart(), shardLayout.chunk());
}

at::Tensor FlatParameterGroup::pieceOfChunk(const at::Tensor &chunk,
                                            const ShardPiece &piece) const {
  return chunk.narrow(0, piece.flatOffset - chunkStart(), piece.length);
}

bool FlatParameterGroup::materialized() const {
  return buffer.storage().nbytes() > 0 || shardLayout.paddedTotal() == 0;
}

void FlatParameterGroup::release() {
  buffer.storage().unsafeGetStorageImpl()->reset();
}

void FlatParameterGroup::allocate() {
  if (materialized())
    return;
  c10::StorageImpl *storage = buffer.storage().unsafeGetStorageImpl();
  size_t bytes = size_t(shardLayout.paddedTotal()) * sizeof(float);
  storage->set_data_ptr_noswap(storage->allocator()->allocate(bytes));
  storage->set_nbytes(bytes);
}

dist::PendingCollective FlatParameterGroup::gatherAsync(const dist::Group &group,
                                                        const at::Tensor &shard) {
  allocate();
  if (!group.valid()) {
    buffer.copy_(shard);
    return dist::PendingCollective();
  }
  return dist::allGatherIntoAsync(group, shard, buffer);
}

void FlatParameterGroup::gather(const dist::Group &group,
                                const at::Tensor &shard) {
  allocate();
  if (group.valid())
    dist::allGatherInto(group, shard, buffer);
  else
    buffer.copy_(shard);
}

at::Tensor FlatParameterGroup::flatGradients() const {
  at::NoGradGuard noGrad;
  at::Tensor grads = at::zeros({shardLayout.paddedTotal()}, at::kFloat);
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].grad().defined())
      grads.narrow(0, shardLayout.offsetOf(i), tensors[i].numel())
          .copy_(tensors[i].grad().reshape({-1}));
  return grads;
}

int64_t FlatParameterGroup::residentBytes() const {
  return int64_t(buffer.storage().nbytes());
}

} // namespace snn::runtime
