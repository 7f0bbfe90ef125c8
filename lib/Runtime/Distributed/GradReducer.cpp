//===- GradReducer.cpp - Bucketed gradient all-reduce ---------------------===//

#include "snn/Runtime/Distributed/GradReducer.h"
#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Distributed/Error.h"
#include "snn/Runtime/Distributed/GradReadyHooks.h"

#include <ATen/ops/zeros.h>

#include <mutex>

namespace snn::dist {

struct GradBucketReducer::Impl {
  struct Slot {
    size_t bucket = 0;
    int64_t offset = 0;
    int64_t numel = 0;
  };
  struct Bucket {
    std::vector<size_t> params;
    at::Tensor flat;
    size_t pending = 0; // parameters whose gradient has not arrived
    bool launched = false;
    PendingCollective work;
  };

  Group group;
  GradReducerOptions options;
  std::vector<at::Tensor> params;
  std::vector<Slot> slots;
  std::vector<Bucket> buckets;
  std::vector<bool> ready;
  size_t nextLaunch = 0;
  size_t launchedByHooks = 0;
  size_t lastLaunchedByHooks = 0;
  bool sync = true;
  std::mutex mutex;
  GradReadyHooks hooks; // last: removed before the buckets go

  std::string prefix() const {
    return "rank " + std::to_string(group.globalRank(group.rank())) +
           ": gradient reducer: ";
  }

  at::Tensor slotView(size_t index) {
    const Slot &slot = slots[index];
    return buckets[slot.bucket]
        .flat.narrow(0, slot.offset, slot.numel)
        .view(params[index].sizes());
  }

  // Copies the current .grad (zeros if none) into the parameter's slot.
  void fill(size_t index) {
    at::Tensor view = slotView(index);
    const at::Tensor &grad = params[index].grad();
    if (grad.defined())
      view.copy_(grad);
    else
      view.zero_();
  }

  // Launches, in bucket order, every complete bucket that can go.
  void launchReady(bool fromHook) {
    while (nextLaunch < buckets.size() && buckets[nextLaunch].pending == 0) {
      Bucket &bucket = buckets[nextLaunch];
      bucket.work = allReduceAsync(group, bucket.flat, ReduceOp::Sum);
      bucket.launched = true;
      if (fromHook)
        ++launchedByHooks;
      ++nextLaunch;
    }
  }

  void onGradReady(size_t index) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!sync)
      return;
    Bucket &bucket = buckets[slots[index].bucket];
    if (ready[index] || bucket.launched)
      throw DistributedError(
          prefix() + "parameter " + std::to_string(index) +
          " got a second gradient in one iteration: call finish() after "
          "every backward(), or setSyncEnabled(false) while accumulating");
    fill(index);
    ready[index] = true;
    if (--bucket.pending == 0)
      launchReady(/*fromHook=*/true);
  }

  /// Defined, leaf, requires grad, dense: else DistributedError.
  void checkParameters() const;
  /// Count, elements, shapes and dtypes agree on every rank of the group.
  void checkSameParametersOnEveryRank() const;
  /// Slots and flat buckets for computeBucketAssignmentBySize's layout.
  void buildBuckets(const std::vector<std::vector<size_t>> &assignment);
  /// A post hook on every parameter's gradient accumulator.
  void registerHooks();

  void resetIteration() {
    for (Bucket &bucket : buckets) {
      bucket.pending = bucket.params.size();
      bucket.launched = false;
      bucket.work = PendingCollective(); // waits for one still in flight
    }
    std::fill(ready.begin(), ready.end(), false);
    nextLaunch = 0;
    lastLaunchedByHooks = launchedByHooks;
    launchedByHooks = 0;
  }
};

std::vector<std::vector<size_t>>
computeBucketAssignmentBySize(const std::vector<at::Tensor> &parameters,
                              size_t bucketBytes) {
  std::vector<std::vector<size_t>> buckets;
  size_t bytesInBucket = 0;
  for (size_t k = parameters.size(); k-- > 0;) {
    const at::Tensor &p = parameters[k];
    const size_t bytes = p.numel() * p.element_size();
    bool startNew = buckets.empty();
    if (!startNew) {
      const at::Tensor &first = parameters[buckets.back().front()];
      startNew = first.scalar_type() != p.scalar_type() ||
                 first.device() != p.device() ||
                 bytesInBucket + bytes > bucketBytes;
    }
    if (startNew) {
      buckets.emplace_back();
      bytesInBucket = 0;
    }
    buckets.back().push_back(k);
    bytesInBucket += bytes;
  }
  return buckets;
}

void GradBucketReducer::Impl::checkParameters() const {
  for (size_t i = 0; i < params.size(); ++i) {
    const at::Tensor &p = params[i];
    std::string what = prefix() + "parameter " + std::to_string(i);
    if (!p.defined())
      throw DistributedError(what + " is undefined");
    if (!p.requires_grad() || !p.is_leaf())
      throw DistributedError(what + " must be a leaf tensor that requires "
                                    "grad");
    if (p.layout() != c10::kStrided)
      throw DistributedError(what + " must be dense");
  }
}

// Every rank must describe the same parameters, or the bucket all-reduces
// would mix unrelated values (or hang on different sizes).
void GradBucketReducer::Impl::checkSameParametersOnEveryRank() const {
  const size_t count = params.size();
  int64_t total = 0;
  uint64_t hash = 1469598103934665603ull;
  for (const at::Tensor &p : params) {
    total += p.numel();
    for (int64_t size : p.sizes())
      hash = (hash ^ static_cast<uint64_t>(size)) * 1099511628211ull;
    hash = (hash ^ static_cast<uint64_t>(p.scalar_type())) * 1099511628211ull;
  }
  at::Tensor signature = at::zeros({3}, at::kLong);
  signature[0] = static_cast<int64_t>(count);
  signature[1] = total;
  signature[2] = static_cast<int64_t>(hash >> 1);
  at::Tensor all = allGather(group, signature).view({group.size(), 3});
  for (int r = 0; r < group.size(); ++r)
    if (!all[r].equal(all[group.rank()]))
      throw DistributedError(
          prefix() + "rank " + std::to_string(group.globalRank(r)) +
          " has different parameters (" +
          std::to_string(all[r][0].item<int64_t>()) + " tensors, " +
          std::to_string(all[r][1].item<int64_t>()) +
          " elements) than this rank (" + std::to_string(count) +
          " tensors, " + std::to_string(total) + " elements)");
}

void GradBucketReducer::Impl::buildBuckets(
    const std::vector<std::vector<size_t>> &assignment) {
  slots.resize(params.size());
  ready.assign(params.size(), false);
  for (const std::vector<size_t> &members : assignment) {
    Bucket &bucket = buckets.emplace_back();
    int64_t numel = 0;
    for (size_t k : members) {
      slots[k] = {buckets.size() - 1, numel, params[k].numel()};
      numel += params[k].numel();
    }
    bucket.params = members;
    const at::Tensor &first = params[members.front()];
    bucket.flat = at::zeros({numel}, first.options().requires_grad(false));
    bucket.pending = members.size();
  }
}

// checkParameters made every parameter a leaf that requires grad.
void GradBucketReducer::Impl::registerHooks() {
  for (size_t k = 0; k < params.size(); ++k)
    hooks.add(params[k], [this, k] { onGradReady(k); });
}

GradBucketReducer::GradBucketReducer(Group group,
                                     std::vector<at::Tensor> parameters,
                                     GradReducerOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl &impl = *impl_;
  if (!group.valid())
    throw DistributedError("gradient reducer: this rank is not a member of "
                           "the group");
  impl.group = group;
  impl.options = options;
  impl.params = std::move(parameters);
  impl.checkParameters();
  impl.checkSameParametersOnEveryRank();
  impl.buildBuckets(
      computeBucketAssignmentBySize(impl.params, options.bucketBytes));
  impl.registerHooks();
}

GradBucketReducer::~GradBucketReducer() {
  // The hooks go first (Impl's last member); bucket works still in flight
  // are waited for by their destructors.
}

void GradBucketReducer::setSyncEnabled(bool enabled) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->sync = enabled;
}

bool GradBucketReducer::syncEnabled() const { return impl_->sync; }

void GradBucketReducer::finish() {
  Impl &impl = *impl_;
  std::lock_guard<std::mutex> lock(impl.mutex);
  if (!impl.sync)
    throw DistributedError(impl.prefix() + "finish() while sync is "
                                           "disabled");
  struct Reset {
    Impl &impl;
    ~Reset() { impl.resetIteration(); }
  } reset{impl};

  // Parameters that got no gradient this time count with their current
  // .grad (or zeros); then everything left goes, in bucket order.
  for (size_t b = impl.nextLaunch; b < impl.buckets.size(); ++b) {
    Impl::Bucket &bucket = impl.buckets[b];
    for (size_t k : bucket.params)
      if (!impl.ready[k]) {
        impl.fill(k);
        impl.ready[k] = true;
      }
    bucket.pending = 0;
  }
  impl.launchReady(/*fromHook=*/false);

  const int size = impl.group.size();
  for (Impl::Bucket &bucket : impl.buckets) {
    bucket.work.wait();
    if (impl.options.average && size > 1)
      bucket.flat.div_(size);
  }
  for (size_t k = 0; k < impl.params.size(); ++k) {
    at::Tensor view = impl.slotView(k);
    at::Tensor &grad = impl.params[k].mutable_grad();
    if (grad.defined())
      grad.copy_(view);
    else
      grad = view.clone();
  }
}

std::vector<std::vector<size_t>> GradBucketReducer::bucketLayout() const {
  std::vector<std::vector<size_t>> layout;
  for (const Impl::Bucket &bucket : impl_->buckets)
    layout.push_back(bucket.params);
  return layout;
}

size_t GradBucketReducer::bucketBytes() const {
  size_t bytes = 0;
  for (const Impl::Bucket &bucket : impl_->buckets)
    bytes += bucket.flat.nbytes();
  return bytes;
}

size_t GradBucketReducer::bucketsLaunchedDuringBackward() const {
  return impl_->lastLaunchedByHooks;
}

} // namespace snn::dist
