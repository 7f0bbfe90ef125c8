//===- GradReducer.h - Bucketed gradient all-reduce -------------*- C++ -*-===//
//
// Data-parallel gradient averaging that overlaps with backward, as PyTorch's
// DistributedDataParallel does. The parameters are packed, in reverse order
// (roughly the order their gradients become ready), into flat buckets of at
// most `bucketBytes` (one dtype and device per bucket). A post hook on each
// parameter's gradient accumulator copies its freshly accumulated `.grad`
// into its bucket; when a bucket is complete it is all-reduced
// asynchronously while backward goes on. Buckets are launched strictly in
// bucket order, so every rank issues the same collectives in the same
// order. finish() launches what is left, waits, divides by the group size
// and writes the averages back into every parameter's `.grad`.
//
//   GradBucketReducer reducer(world->group(), parameters);
//   loss.backward();
//   reducer.finish();       // every .grad is now the mean over ranks
//   optimizer.step();
//
// A parameter that got no gradient in this backward counts as its current
// `.grad`, or zeros if it has none; after finish() every parameter has a
// `.grad`. For gradient accumulation, setSyncEnabled(false) before the
// backwards that should only accumulate locally, and enable it for the last.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_DISTRIBUTED_GRADREDUCER_H
#define SNN_RUNTIME_DISTRIBUTED_GRADREDUCER_H

#include "snn/Runtime/Distributed/Group.h"
#include "snn/Schema/TrainingCommunication.h"

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace snn::dist {

struct GradReducerOptions {
  /// Bucket capacity; a parameter larger than this gets a bucket of its own.
  size_t bucketBytes = schema::kGradientBucketBytes;
  /// Divide the sum by the group size (the mean). Off: the sum.
  bool average = true;
};

/// Which parameters share a gradient bucket, as PyTorch's reducer decides
/// with compute_bucket_assignment_by_size: walking from the last parameter
/// to the first, each joins the current bucket unless its dtype or device
/// differs from the bucket's, or it would take the bucket past
/// `bucketBytes` (numel * element size); then it starts a new one. So a
/// parameter larger than `bucketBytes` gets a bucket of its own. Returns the
/// parameter indices of each bucket, in launch order (each bucket's indices
/// descending); GradBucketReducer::bucketLayout() is this.
std::vector<std::vector<size_t>>
computeBucketAssignmentBySize(const std::vector<at::Tensor> &parameters,
                              size_t bucketBytes);

class GradBucketReducer {
public:
  /// `parameters`: leaf tensors that require grad (in model order). Every
  /// rank must pass the same shapes in the same order. Registers the hooks.
  GradBucketReducer(Group group, std::vector<at::Tensor> parameters,
                    GradReducerOptions options = {});
  /// Removes the hooks (waits for any collective still in flight).
  ~GradBucketReducer();
  GradBucketReducer(const GradBucketReducer &) = delete;
  GradBucketReducer &operator=(const GradBucketReducer &) = delete;

  /// Off: hooks do nothing and finish() must not be called (accumulate
  /// locally). Only change it between iterations.
  void setSyncEnabled(bool enabled);
  bool syncEnabled() const;

  /// Completes the iteration: see the file comment. Throws DistributedError
  /// on a lost peer, and for a gradient that arrives after its bucket left.
  void finish();

  /// Parameter indices (into the constructor's list) of each bucket.
  std::vector<std::vector<size_t>> bucketLayout() const;
  /// Buckets launched by hooks during the last backward, before finish()
  /// (a measure of the overlap; the rest were launched by finish()).
  size_t bucketsLaunchedDuringBackward() const;
  /// Memory of the flat buckets (they live as long as the reducer).
  size_t bucketBytes() const;

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace snn::dist

#endif // SNN_RUNTIME_DISTRIBUTED_GRADREDUCER_H
