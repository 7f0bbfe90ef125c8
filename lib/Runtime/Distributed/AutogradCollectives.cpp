//===- AutogradCollectives.cpp - Differentiable collectives ---------------===//
//
// All the torch::autograd::Function definitions live in this one translation
// unit (custom_function.h is heavy). See AutogradCollectives.h.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Distributed/AutogradCollectives.h"
#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Distributed/Error.h"

#include <torch/csrc/autograd/custom_function.h>

#include <chrono>

namespace snn::dist {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// A Group and its trace in ctx->saved_data (an IValue capsule).
struct GroupHolder : torch::CustomClassHolder {
  GroupHolder(Group group, CollectiveTrace trace)
      : group(std::move(group)), trace(std::move(trace)) {}
  Group group;
  CollectiveTrace trace;
};

void saveGroup(AutogradContext *ctx, const Group &group,
               const CollectiveTrace &trace) {
  ctx->saved_data["group"] = c10::IValue::make_capsule(
      c10::make_intrusive<GroupHolder>(group, trace));
}

const GroupHolder &loadGroup(AutogradContext *ctx) {
  auto capsule = ctx->saved_data["group"].toCapsule();
  return *static_cast<GroupHolder *>(capsule.get());
}

using Clock = std::chrono::steady_clock;

/// Tells `trace` of a collective that returned `result` and began at `start`
/// (a group of one communicates nothing).
void report(const CollectiveTrace &trace, const Group &group,
            CollectiveKind kind, const at::Tensor &result, Clock::time_point start) {
  if (trace && group.size() > 1)
    trace(kind, int64_t(result.numel()) * int64_t(result.element_size()),
          std::chrono::duration<double>(Clock::now() - start).count());
}

int64_t normalizeDim(const char *op, const at::Tensor &x, int64_t dim) {
  const int64_t rank = x.dim();
  if (rank == 0)
    throw DistributedError(std::string(op) + ": needs a tensor with at least "
                                             "one dimension");
  if (dim < -rank || dim >= rank)
    throw DistributedError(std::string(op) + ": dim " + std::to_string(dim) +
                           " is out of range for a " + std::to_string(rank) +
                           "-d tensor");
  return dim < 0 ? dim + rank : dim;
}

void requireDivisible(const char *op, const at::Tensor &x, int64_t dim,
                      const Group &group) {
  if (x.size(dim) % group.size() != 0)
    throw DistributedError(std::string(op) + ": dim " + std::to_string(dim) +
                           " of shape " + c10::str(x.sizes()) +
                           " is not divisible by the size " +
                           std::to_string(group.size()) + " of group " +
                           group.name());
}

// The members' tensors concatenated along `dim`.
at::Tensor gatherAlong(const Group &group, const at::Tensor &x, int64_t dim) {
  if (dim == 0)
    return allGather(group, x);
  at::Tensor gathered = allGather(group, x.transpose(0, dim).contiguous());
  return gathered.transpose(0, dim).contiguous();
}

// The reduction over members, split along `dim`: this member's chunk.
at::Tensor reduceScatterAlong(const Group &group, const at::Tensor &x,
                              int64_t dim) {
  if (dim == 0)
    return reduceScatter(group, x);
  at::Tensor chunk = reduceScatter(group, x.transpose(0, dim).contiguous());
  return chunk.transpose(0, dim).contiguous();
}

at::Tensor ownChunk(const Group &group, const at::Tensor &x, int64_t dim) {
  const int64_t rows = x.size(dim) / group.size();
  return x.narrow(dim, group.rank() * rows, rows).clone(
      at::MemoryFormat::Contiguous);
}

// f: identity forward, all_reduce backward.
struct CopyToGroupFunction : torch::autograd::Function<CopyToGroupFunction> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x,
                            const Group &group, const CollectiveTrace &trace) {
    saveGroup(ctx, group, trace);
    return x;
  }
  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    const GroupHolder &held = loadGroup(ctx);
    Clock::time_point start = Clock::now();
    at::Tensor grad = grads[0].clone(at::MemoryFormat::Contiguous);
    allReduce(held.group, grad, ReduceOp::Sum);
    report(held.trace, held.group, CollectiveKind::AllReduce, grad, start);
    return {grad, at::Tensor(), at::Tensor()};
  }
};

// g: all_reduce forward, identity backward.
struct ReduceFromGroupFunction
    : torch::autograd::Function<ReduceFromGroupFunction> {
  static at::Tensor forward(AutogradContext *, const at::Tensor &x,
                            const Group &group, const CollectiveTrace &trace) {
    Clock::time_point start = Clock::now();
    at::Tensor out = x.clone(at::MemoryFormat::Contiguous);
    allReduce(group, out, ReduceOp::Sum);
    report(trace, group, CollectiveKind::AllReduce, out, start);
    return out;
  }
  static variable_list backward(AutogradContext *, variable_list grads) {
    return {grads[0], at::Tensor(), at::Tensor()};
  }
};

struct GatherFromGroupFunction
    : torch::autograd::Function<GatherFromGroupFunction> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x,
                            const Group &group, int64_t dim,
                            int64_t reduceScatterBackward,
                            const CollectiveTrace &trace) {
    saveGroup(ctx, group, trace);
    ctx->saved_data["dim"] = dim;
    ctx->saved_data["reduce_scatter"] = reduceScatterBackward;
    Clock::time_point start = Clock::now();
    at::Tensor out = gatherAlong(group, x, dim);
    report(trace, group, CollectiveKind::AllGather, out, start);
    return out;
  }
  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    const GroupHolder &held = loadGroup(ctx);
    int64_t dim = ctx->saved_data["dim"].toInt();
    at::Tensor grad;
    if (ctx->saved_data["reduce_scatter"].toInt()) {
      Clock::time_point start = Clock::now();
      grad = reduceScatterAlong(held.group, grads[0], dim);
      report(held.trace, held.group, CollectiveKind::ReduceScatter, grad, start);
    } else {
      grad = ownChunk(held.group, grads[0], dim);
    }
    return {grad, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

struct ScatterToGroupFunction
    : torch::autograd::Function<ScatterToGroupFunction> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x,
                            const Group &group, int64_t dim,
                            const CollectiveTrace &trace) {
    saveGroup(ctx, group, trace);
    ctx->saved_data["dim"] = dim;
    return ownChunk(group, x, dim);
  }
  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    const GroupHolder &held = loadGroup(ctx);
    int64_t dim = ctx->saved_data["dim"].toInt();
    Clock::time_point start = Clock::now();
    at::Tensor grad = gatherAlong(held.group, grads[0], dim);
    report(held.trace, held.group, CollectiveKind::AllGather, grad, start);
    return {grad, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

struct ReduceScatterToGroupFunction
    : torch::autograd::Function<ReduceScatterToGroupFunction> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x,
                            const Group &group, int64_t dim,
                            const CollectiveTrace &trace) {
    saveGroup(ctx, group, trace);
    ctx->saved_data["dim"] = dim;
    Clock::time_point start = Clock::now();
    at::Tensor out = reduceScatterAlong(group, x, dim);
    report(trace, group, CollectiveKind::ReduceScatter, out, start);
    return out;
  }
  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    const GroupHolder &held = loadGroup(ctx);
    int64_t dim = ctx->saved_data["dim"].toInt();
    Clock::time_point start = Clock::now();
    at::Tensor grad = gatherAlong(held.group, grads[0], dim);
    report(held.trace, held.group, CollectiveKind::AllGather, grad, start);
    return {grad, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

void requireValid(const char *op, const Group &group) {
  if (!group.valid())
    throw DistributedError(std::string(op) +
                           ": this rank is not a member of the group");
}

} // namespace

const char *collectiveKindName(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::AllGather:
    return "all_gather";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  }
  return "?";
}

at::Tensor copyToGroup(const at::Tensor &input, const Group &group,
                       const CollectiveTrace &trace) {
  requireValid("copyToGroup", group);
  return CopyToGroupFunction::apply(input, group, trace);
}

at::Tensor reduceFromGroup(const at::Tensor &input, const Group &group,
                           const CollectiveTrace &trace) {
  requireValid("reduceFromGroup", group);
  return ReduceFromGroupFunction::apply(input, group, trace);
}

at::Tensor gatherFromGroup(const at::Tensor &input, const Group &group,
                           int64_t dim, GatherBackward backward,
                           const CollectiveTrace &trace) {
  requireValid("gatherFromGroup", group);
  dim = normalizeDim("gatherFromGroup", input, dim);
  return GatherFromGroupFunction::apply(
      input, group, dim,
      static_cast<int64_t>(backward == GatherBackward::ReduceScatter), trace);
}

at::Tensor scatterToGroup(const at::Tensor &input, const Group &group,
                          int64_t dim, const CollectiveTrace &trace) {
  requireValid("scatterToGroup", group);
  dim = normalizeDim("scatterToGroup", input, dim);
  requireDivisible("scatterToGroup", input, dim, group);
  return ScatterToGroupFunction::apply(input, group, dim, trace);
}

at::Tensor reduceScatterToGroup(const at::Tensor &input, const Group &group,
                                int64_t dim, const CollectiveTrace &trace) {
  requireValid("reduceScatterToGroup", group);
  dim = normalizeDim("reduceScatterToGroup", input, dim);
  requireDivisible("reduceScatterToGroup", input, dim, group);
  return ReduceScatterToGroupFunction::apply(input, group, dim, trace);
}

} // namespace snn::dist
