//===- BatchLoader.h - Batches of an epoch in order -------------*- C++ -*-===//
//
// Produces the batches of docs/training.md: batch b of epoch e holds samples
// order[b*B : (b+1)*B] of the epoch's order (SampleOrder.h), assembled as one
// contiguous time-major float32 tensor [T, N, ...] plus int64 labels [N].
// The tensors are reused from batch to batch, so a batch stays valid only
// until the next call to batch() (the training step is done with it by
// then: autograd releases what it saved in backward).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_DATA_BATCHLOADER_H
#define SNN_RUNTIME_DATA_BATCHLOADER_H

#include "snn/Runtime/Data/BatchLayout.h"
#include "snn/Runtime/Data/Dataset.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace snn::runtime {

struct LoaderOptions {
  int64_t batchSize = 1;
  /// false: file order in every epoch (--no-shuffle).
  bool shuffle = true;
  /// true: a final short batch is dropped (--drop-last).
  bool dropLast = true;
  /// Seeds the per-epoch order.
  uint64_t seed = 0;
  /// Data parallelism: this loader yields positions [i*B/n, (i+1)*B/n) of
  /// every global batch of B = batchSize samples, for shard i of n. B (and a
  /// kept short last batch) must be divisible by n.
  int64_t shardIndex = 0;
  int64_t shardCount = 1;
};

/// Throws Error unless the global batch `batchSize` splits evenly over `ranks`
/// data-parallel ranks. The launcher (`--nproc`) checks it before any rank starts, each
/// rank's loader again.
void checkBatchSplit(int64_t batchSize, int64_t ranks);

struct Batch {
  at::Tensor input;  // float32 [T, N, ...] (or [N, ...] without a time axis)
  at::Tensor labels; // int64 [N]
  int64_t size = 0;  // N
};

class BatchLoader {
public:
  BatchLoader(const Dataset &dataset, BatchLayout layout,
              LoaderOptions options);

  /// Global batches per epoch (the same on every shard).
  int64_t batchesPerEpoch() const;
  const Dataset &dataset() const { return data; }
  const LoaderOptions &options() const { return opts; }

  /// Selects the order of epoch `epoch` (0-based).
  void startEpoch(int64_t epoch);
  /// Batch `index` of the current epoch (this shard's part of it), in the
  /// loader's reused tensors.
  Batch batch(int64_t index);

private:
  /// The reused tensors for batches of `size` samples.
  Batch &buffersFor(int64_t size);
  void fillStatic(const int64_t *indices, Batch &out) const;
  void fillSequences(const int64_t *indices, Batch &out) const;

  Dataset data;
  BatchLayout layout;
  LoaderOptions opts;
  int64_t sampleNumel = 0; // floats per sample per time step
  std::vector<int64_t> order;
  Batch full, last; // a full batch and a final short one
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_DATA_BATCHLOADER_H
