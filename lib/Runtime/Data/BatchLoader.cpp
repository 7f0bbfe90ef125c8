//===- BatchLoader.cpp - Batches of an epoch in the specified order -------===//

#include "snn/Runtime/Data/BatchLoader.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Data/SampleOrder.h"

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>

#include <cstring>

namespace snn::runtime {

namespace {

/// Per-sample copies are a few KB: split the batch so that each task moves
/// enough bytes to be worth a thread.
int64_t grainFor(int64_t bytesPerSample) {
  return std::max<int64_t>(1, (int64_t(1) << 16) /
                                  std::max<int64_t>(1, bytesPerSample));
}

} // namespace

void checkBatchSplit(int64_t batchSize, int64_t ranks) {
  if (batchSize % ranks != 0)
    throw Error("--batch-size " + std::to_string(batchSize) + " is not divisible by the " +
                std::to_string(ranks) +
                " data-parallel ranks (--batch-size is the global batch, "
                "split evenly over the ranks)");
}

BatchLoader::BatchLoader(const Dataset &dataset, BatchLayout layout,
                         LoaderOptions options)
    : data(dataset), layout(layout), opts(options) {
  if (opts.batchSize < 1)
    throw Error("--batch-size must be at least 1");
  if (opts.shardCount < 1 || opts.shardIndex < 0 ||
      opts.shardIndex >= opts.shardCount)
    throw Error("invalid data shard " + std::to_string(opts.shardIndex) +
                " of " + std::to_string(opts.shardCount));
  checkBatchSplit(opts.batchSize, opts.shardCount);
  int64_t rest = dataset.size() % opts.batchSize;
  if (!opts.dropLast && rest != 0 && rest % opts.shardCount != 0)
    throw Error("--keep-last: the last batch of " + std::to_string(rest) +
                " samples (" + std::to_string(dataset.size()) + " % " +
                std::to_string(opts.batchSize) +
                ") cannot be split evenly over the " +
                std::to_string(opts.shardCount) +
                " data-parallel ranks; use --drop-last or another "
                "--batch-size");
  data.samples = data.samples.contiguous();
  data.labels = data.labels.contiguous();
  int64_t perSample = data.size() ? data.samples[0].numel() : 0;
  sampleNumel = layout.sequences ? perSample / layout.steps : perSample;
  startEpoch(0);
}

int64_t BatchLoader::batchesPerEpoch() const {
  int64_t count = data.size();
  return opts.dropLast ? count / opts.batchSize
                       : (count + opts.batchSize - 1) / opts.batchSize;
}

void BatchLoader::startEpoch(int64_t epoch) {
  order = opts.shuffle ? shuffledOrder(opts.seed, epoch, data.size())
                       : fileOrder(data.size());
}

Batch &BatchLoader::buffersFor(int64_t size) {
  Batch &buffers = size == opts.batchSize / opts.shardCount ? full : last;
  if (buffers.size == size)
    return buffers;
  std::vector<int64_t> shape;
  if (layout.steps > 0)
    shape.push_back(layout.steps);
  shape.push_back(size);
  at::IntArrayRef sample = data.samples.sizes().slice(layout.sequences ? 2 : 1);
  shape.insert(shape.end(), sample.begin(), sample.end());
  buffers.input = at::empty(shape, at::kFloat);
  buffers.labels = at::empty({size}, at::kLong);
  buffers.size = size;
  return buffers;
}

Batch BatchLoader::batch(int64_t index) {
  if (index < 0 || index >= batchesPerEpoch())
    throw Error("batch " + std::to_string(index) + " is out of range");
  int64_t begin = index * opts.batchSize;
  int64_t size = std::min(opts.batchSize, data.size() - begin);
  // This shard's positions of the global batch (sizes checked divisible).
  size /= opts.shardCount;
  begin += opts.shardIndex * size;
  Batch &out = buffersFor(size);
  const int64_t *indices = order.data() + begin;
  const int64_t *labels = data.labels.data_ptr<int64_t>();
  int64_t *labelsOut = out.labels.data_ptr<int64_t>();
  for (int64_t i = 0; i < size; ++i)
    labelsOut[i] = labels[indices[i]];
  if (layout.sequences)
    fillSequences(indices, out);
  else
    fillStatic(indices, out);
  return out;
}

void BatchLoader::fillStatic(const int64_t *indices, Batch &out) const {
  const float *samples = data.samples.data_ptr<float>();
  float *input = out.input.data_ptr<float>();
  size_t bytes = size_t(sampleNumel) * sizeof(float);
  at::parallel_for(0, out.size, grainFor(int64_t(bytes)),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t i = begin; i < end; ++i)
                       std::memcpy(input + i * sampleNumel,
                                   samples + indices[i] * sampleNumel, bytes);
                   });
  // Direct encoding: time steps 1..T-1 are copies of step 0.
  size_t stepBytes = bytes * size_t(out.size);
  for (int64_t t = 1; t < layout.steps; ++t)
    std::memcpy(input + t * out.size * sampleNumel, input, stepBytes);
}

void BatchLoader::fillSequences(const int64_t *indices, Batch &out) const {
  // [S, T, ...] sample-major on disk -> [T, N, ...] time-major.
  const float *samples = data.samples.data_ptr<float>();
  float *input = out.input.data_ptr<float>();
  int64_t steps = layout.steps, batch = out.size;
  size_t bytes = size_t(sampleNumel) * sizeof(float);
  at::parallel_for(0, batch, grainFor(int64_t(bytes) * steps),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t i = begin; i < end; ++i)
                       for (int64_t t = 0; t < steps; ++t)
                         std::memcpy(input + (t * batch + i) * sampleNumel,
                                     samples +
                                         (indices[i] * steps + t) * sampleNumel,
                                     bytes);
                   });
}

} // namespace snn::runtime
