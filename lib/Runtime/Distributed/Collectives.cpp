//===- Collectives.cpp - Synchronous collectives on a Group ---------------===//

#include "snn/Runtime/Distributed/Collectives.h"
#include "GroupState.h"
#include "snn/Schema/CollectiveAlgorithms.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <c10/core/InferenceMode.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/minimum.h>

namespace snn::dist {

using detail::GroupState;

const char *reduceOpName(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum: return "sum";
  case ReduceOp::Avg: return "avg";
  case ReduceOp::Max: return "max";
  case ReduceOp::Min: return "min";
  case ReduceOp::Product: return "product";
  }
  return "?";
}

static c10d::ReduceOp toC10d(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
  case ReduceOp::Avg: // Gloo has no AVG: sum, then divide
    return c10d::ReduceOp::SUM;
  case ReduceOp::Max: return c10d::ReduceOp::MAX;
  case ReduceOp::Min: return c10d::ReduceOp::MIN;
  case ReduceOp::Product: return c10d::ReduceOp::PRODUCT;
  }
  return c10d::ReduceOp::SUM;
}

[[noreturn]] static void badArgument(const GroupState &g, const char *op,
                                     const std::string &problem) {
  throw DistributedError(g.prefix() + op + " on group " + g.name + ": " +
                         problem);
}

static void checkTensor(const GroupState &g, const char *op,
                        const at::Tensor &tensor, ReduceOp reduce) {
  if (!tensor.defined())
    badArgument(g, op, "undefined tensor");
  if (tensor.layout() != c10::kStrided)
    badArgument(g, op, "only dense tensors are supported");
  if (g.backend == Backend::Gloo && !tensor.device().is_cpu())
    badArgument(g, op, "the gloo backend needs CPU tensors, got " +
                           tensor.device().str());
  if (g.backend == Backend::Nccl && !tensor.device().is_cuda())
    badArgument(g, op, "the nccl backend needs CUDA tensors, got " +
                           tensor.device().str());
  if (reduce == ReduceOp::Avg && !at::isFloatingType(tensor.scalar_type()))
    badArgument(g, op, std::string("avg needs a floating point tensor, got ") +
                           c10::toString(tensor.scalar_type()));
}

// Combines `into` with `other` in place.
static void combine(at::Tensor &into, const at::Tensor &other, ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
  case ReduceOp::Avg:
    into.add_(other);
    break;
  case ReduceOp::Product:
    into.mul_(other);
    break;
  case ReduceOp::Max:
    at::maximum_out(into, into, other);
    break;
  case ReduceOp::Min:
    at::minimum_out(into, into, other);
    break;
  }
}

// One step of a collective made of send/recv: `out` to `sendPeer` while `in`
// comes from `recvPeer`, both waited for. `tag` keeps the collective's
// messages apart from every other (p2p slots never collide with Gloo's
// collective slots).
static void exchange(GroupState &g, const char *op, uint64_t sequence, int tag,
                     const at::Tensor &out, int sendPeer, at::Tensor &in, int recvPeer) {
  std::vector<at::Tensor> sendTensors{out};
  std::vector<at::Tensor> recvTensors{in};
  c10::intrusive_ptr<c10d::Work> sendWork, recvWork;
  try {
    sendWork = g.pg->send(sendTensors, sendPeer, tag);
    recvWork = g.pg->recv(recvTensors, recvPeer, tag);
  } catch (const std::exception &e) {
    g.world->failCollective(g, op, sequence, describeException(e));
  }
  detail::waitWork(g, recvWork, op, sequence);
  detail::waitWork(g, sendWork, op, sequence);
}

static int tagOf(uint64_t sequence) {
  return static_cast<int>(sequence % (uint64_t(1) << 30));
}

// Gloo's all_reduce costs about 1.9 ms for 4 KiB on 2 ranks of an idle 2-CPU
// machine (5.5 ms on 4), where exchanging the tensor takes 0.2-0.4 ms (0.5-0.6
// ms a step on 4): small tensors, which are latency-bound (SyncBatchNorm's
// statistics, tp's partial sums, the step's metrics), go by recursive
// doubling instead, log2(n) exchanges of the whole tensor with rank ^ 2^k.
// Both ends of a step add the same two tensors (a + b == b + a in IEEE
// arithmetic, and so for max, min and product), so every member ends with
// the same bits. Larger tensors keep Gloo's ring, whose steps send 1/n of it
// (schema/CollectiveAlgorithms.h, which the planner counts by).
static bool allReduceByDoubling(const GroupState &g, const at::Tensor &tensor) {
  return g.backend == Backend::Gloo &&
         schema::allReduceByRecursiveDoubling(
             g.size(), tensor.numel() * int64_t(tensor.element_size()));
}

static void recursiveDoublingAllReduce(GroupState &g, at::Tensor &buffer, ReduceOp op) {
  const uint64_t sequence = ++*g.sequence;
  at::Tensor received = at::empty_like(buffer);
  for (int distance = 1; distance < g.size(); distance <<= 1) {
    const int peer = g.rank ^ distance;
    exchange(g, "all_reduce", sequence, tagOf(sequence), buffer, peer, received, peer);
    combine(buffer, received, op);
  }
}

void allReduce(const Group &group, at::Tensor &tensor, ReduceOp op) {
  // The same path as the async one, waited for at once (a small one by recursive doubling).
  allReduceAsync(group, tensor, op).wait();
}

at::Tensor allGather(const Group &group, const at::Tensor &tensor) {
  // Gloo copies into the output on its worker thread, where InferenceMode
  // (thread-local) is off: the output must be a normal tensor, not an
  // inference tensor, even when the caller runs inference (snn-run infer).
  c10::InferenceMode normalTensors(false);
  at::Tensor input = tensor.contiguous();
  if (input.dim() == 0)
    input = input.reshape({1});
  std::vector<int64_t> shape = input.sizes().vec();
  shape[0] *= group.size();
  at::Tensor output = at::empty(shape, input.options());
  allGatherInto(group, input, output);
  return output;
}

/// Checks the shapes and starts the all_gather of `input` (made contiguous,
/// a 0-dim tensor as [1]) into `output`. Null work when nothing is to be
/// sent (a group of one copies; an empty input leaves `output` as it is).
static c10::intrusive_ptr<c10d::Work>
startAllGather(GroupState &g, const at::Tensor &tensor, at::Tensor &input,
               at::Tensor &output, uint64_t &sequence) {
  checkTensor(g, "all_gather", tensor, ReduceOp::Sum);
  input = tensor.contiguous();
  if (input.dim() == 0)
    input = input.reshape({1});
  const int n = g.size();
  std::vector<int64_t> shape = input.sizes().vec();
  const int64_t rows = shape[0];
  shape[0] *= n;
  if (output.sizes() != c10::IntArrayRef(shape) ||
      output.scalar_type() != input.scalar_type() || !output.is_contiguous())
    badArgument(g, "all_gather",
                "output of shape " + c10::str(output.sizes()) +
                    " cannot hold " + std::to_string(n) +
                    " contiguous inputs of shape " + c10::str(input.sizes()));
  if (n == 1) {
    output.copy_(input);
    return {};
  }
  if (input.numel() == 0) // nothing to send (Gloo divides by the count)
    return {};
  c10d::AllgatherOptions options;
  options.timeout = g.timeout;
  if (g.backend == Backend::Nccl)
    return detail::startCollective(g, "all_gather", sequence, [&] {
      return g.pg->_allgather_base(output, input, options);
    });
  // Gloo has no _allgather_base: gather into views of the flat output.
  std::vector<std::vector<at::Tensor>> outputs(1);
  for (int i = 0; i < n; ++i)
    outputs[0].push_back(output.narrow(0, i * rows, rows));
  std::vector<at::Tensor> inputs{input};
  return detail::startCollective(g, "all_gather", sequence, [&] {
    return g.pg->allgather(outputs, inputs, options);
  });
}

void allGatherInto(const Group &group, const at::Tensor &tensor,
                   at::Tensor &output) {
  GroupState &g = group.state();
  at::Tensor input;
  uint64_t sequence = 0;
  auto work = startAllGather(g, tensor, input, output, sequence);
  if (work)
    detail::waitWork(g, work, "all_gather", sequence);
}

// reduce_scatter as a ring of send/recv (Gloo has none). Step k: rank r
// sends its partial result for chunk (r - k - 1) mod n to r + 1, receives
// the partial for chunk (r - k - 2) mod n from r - 1 and adds its own
// contribution; after n - 1 steps it holds the full reduction of chunk r.
static at::Tensor ringReduceScatter(GroupState &g, const at::Tensor &input,
                                    int64_t rows, ReduceOp op) {
  const int n = g.size();
  const int r = g.rank;
  const int next = (r + 1) % n;
  const int prev = (r + n - 1) % n;
  auto chunk = [&](int index) {
    return input.narrow(0, ((index % n) + n) % n * rows, rows);
  };
  at::Tensor accumulated = chunk(r - 1).clone();
  at::Tensor received = at::empty_like(accumulated);
  // One number for the whole ring; the steps use it as their tag.
  const uint64_t sequence = ++*g.sequence;
  for (int step = 0; step < n - 1; ++step) {
    exchange(g, "reduce_scatter", sequence, tagOf(sequence), accumulated, next, received,
             prev);
    combine(received, chunk(r - step - 2), op);
    std::swap(accumulated, received);
  }
  return accumulated;
}

at::Tensor reduceScatter(const Group &group, const at::Tensor &tensor,
                         ReduceOp op) {
  GroupState &g = group.state();
  checkTensor(g, "reduce_scatter", tensor, op);
  const int n = g.size();
  if (tensor.dim() == 0 || tensor.size(0) % n != 0)
    badArgument(g, "reduce_scatter",
                "dim 0 of shape " + c10::str(tensor.sizes()) +
                    " is not divisible by the group size " + std::to_string(n));
  at::Tensor input = tensor.contiguous();
  const int64_t rows = input.size(0) / n;
  if (n == 1 || input.numel() == 0)
    return input.narrow(0, g.rank * rows, rows).clone();
  at::Tensor output;
  if (g.backend == Backend::Nccl) {
    std::vector<int64_t> shape = input.sizes().vec();
    shape[0] = rows;
    output = at::empty(shape, input.options());
    c10d::ReduceScatterOptions options;
    options.reduceOp = toC10d(op);
    options.timeout = g.timeout;
    uint64_t sequence = 0;
    auto work = detail::startCollective(g, "reduce_scatter", sequence, [&] {
      return g.pg->_reduce_scatter_base(output, input, options);
    });
    detail::waitWork(g, work, "reduce_scatter", sequence);
  } else {
    output = ringReduceScatter(g, input, rows, op);
  }
  if (op == ReduceOp::Avg)
    output.div_(n);
  return output;
}

void broadcast(const Group &group, at::Tensor &tensor, int root) {
  GroupState &g = group.state();
  checkTensor(g, "broadcast", tensor, ReduceOp::Sum);
  if (root < 0 || root >= g.size())
    badArgument(g, "broadcast",
                "root " + std::to_string(root) + " is not a rank of the group "
                "(size " + std::to_string(g.size()) + ")");
  if (g.size() == 1 || tensor.numel() == 0)
    return;
  const bool contiguous = tensor.is_contiguous();
  at::Tensor buffer = contiguous ? tensor : tensor.contiguous();
  std::vector<at::Tensor> tensors{buffer};
  c10d::BroadcastOptions options;
  options.rootRank = root;
  options.rootTensor = 0;
  options.timeout = g.timeout;
  uint64_t sequence = 0;
  auto work = detail::startCollective(g, "broadcast", sequence, [&] {
    return g.pg->broadcast(tensors, options);
  });
  detail::waitWork(g, work, "broadcast", sequence);
  if (!contiguous)
    tensor.copy_(buffer);
}

void barrier(const Group &group) {
  GroupState &g = group.state();
  if (g.size() == 1)
    return;
  c10d::BarrierOptions options;
  options.timeout = g.timeout;
  uint64_t sequence = 0;
  auto work = detail::startCollective(
      g, "barrier", sequence, [&] { return g.pg->barrier(options); });
  detail::waitWork(g, work, "barrier", sequence);
}

//===----------------------------------------------------------------------===//
// Async all_reduce
//===----------------------------------------------------------------------===//

struct detail::PendingState {
  Group group;
  const char *name = "all_reduce";
  at::Tensor tensor; // the caller's
  at::Tensor buffer; // contiguous; the same tensor when it already was
  at::Tensor input;  // all_gather: kept alive until the collective ends
  c10::intrusive_ptr<c10d::Work> work; // null for a group of one
  uint64_t sequence = 0;
  ReduceOp op = ReduceOp::Sum;
  /// A small all_reduce runs by recursive doubling when waited for: every
  /// member defers it alike, so the members still agree on the order.
  bool byDoubling = false;
};

PendingCollective allReduceAsync(const Group &group, at::Tensor &tensor,
                                 ReduceOp op) {
  GroupState &g = group.state();
  checkTensor(g, "all_reduce", tensor, op);
  auto state = std::make_unique<detail::PendingState>();
  state->group = group;
  state->tensor = tensor;
  state->op = op;
  state->buffer = tensor.is_contiguous() ? tensor : tensor.contiguous();
  if (g.size() > 1 && tensor.numel() > 0 && allReduceByDoubling(g, state->buffer)) {
    state->byDoubling = true;
  } else if (g.size() > 1 && tensor.numel() > 0) {
    std::vector<at::Tensor> tensors{state->buffer};
    c10d::AllreduceOptions options;
    options.reduceOp = toC10d(op);
    options.timeout = g.timeout;
    state->work = detail::startCollective(g, "all_reduce", state->sequence, [&] {
      return g.pg->allreduce(tensors, options);
    });
  }
  PendingCollective pending;
  pending.state_ = std::move(state);
  return pending;
}

PendingCollective allGatherIntoAsync(const Group &group,
                                     const at::Tensor &tensor,
                                     at::Tensor &output) {
  auto state = std::make_unique<detail::PendingState>();
  state->work = startAllGather(group.state(), tensor, state->input, output,
                               state->sequence);
  if (!state->work)
    return PendingCollective();
  state->group = group;
  state->name = "all_gather";
  state->tensor = output;
  state->buffer = output;
  PendingCollective pending;
  pending.state_ = std::move(state);
  return pending;
}

PendingCollective::PendingCollective() = default;
PendingCollective::PendingCollective(PendingCollective &&) noexcept = default;

void PendingCollective::wait() {
  if (!state_)
    throw DistributedError("wait() on an empty or finished collective");
  std::unique_ptr<detail::PendingState> state = std::move(state_);
  GroupState &g = state->group.state();
  if (state->work)
    detail::waitWork(g, state->work, state->name, state->sequence);
  else if (state->byDoubling)
    recursiveDoublingAllReduce(g, state->buffer, state->op);
  if (state->op == ReduceOp::Avg)
    state->buffer.div_(g.size());
  if (!state->buffer.is_same(state->tensor))
    state->tensor.copy_(state->buffer);
}

PendingCollective &PendingCollective::operator=(PendingCollective &&other) noexcept {
  if (this != &other) {
    if (state_) {
      try {
        wait();
      } catch (...) {
      }
    }
    state_ = std::move(other.state_);
  }
  return *this;
}

PendingCollective::~PendingCollective() {
  if (state_ && state_->work) {
    try {
      state_->work->wait(state_->group.timeout() +
                         std::chrono::milliseconds(2000));
    } catch (...) {
    }
  }
}

} // namespace snn::dist
