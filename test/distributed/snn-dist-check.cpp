//===- snn-dist-check - Multi-process checks of the distributed layer -----===//
//
// A small rank program for the distributed tests (test/distributed): with
// --nproc N it launches N copies of itself through the launcher; without it
// it is one rank (torchrun variables), runs one scenario on real process
// groups and checks every result against values computed in closed form.
//
//   snn-dist-check [--nproc N [--master-port P] [--grace-ms G]] SCENARIO...
//                  [--timeout-ms T] [--rank R] [--code C] [--iterations K]
//                  [--axes a,b --shape 2,2] [--marker TEXT]
//
// Scenarios, run in the order given: collectives, mesh, autograd, reducer,
// p2p (numerics); ops (the runtime's kernels of a partitioned program's
// collectives, CollectiveOpsCheck.cpp); exit, kill, hang, sleep, p2p_kill,
// p2p_hang, size_mismatch (failure handling). Prints
// "rank R: SCENARIO ok" after each, "error: ..." and exit 1 on a failed
// check.
//
//===----------------------------------------------------------------------===//

#include "CollectiveOpsCheck.h"

#include "snn/Runtime/Distributed/AutogradCollectives.h"
#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Distributed/Environment.h"
#include "snn/Runtime/Distributed/Error.h"
#include "snn/Runtime/Distributed/GradReducer.h"
#include "snn/Runtime/Distributed/Launcher.h"
#include "snn/Runtime/Distributed/PointToPoint.h"
#include "snn/Runtime/Distributed/Group.h"
#include "snn/Runtime/Distributed/Mesh.h"
#include "snn/Runtime/Distributed/World.h"

#include <ATen/Context.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/full.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/remainder.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>

#include <csignal>
#include <functional>
#include <iostream>
#include <sstream>
#include <thread>
#include <unistd.h>

using namespace snn::dist;

namespace {

struct Options {
  std::vector<std::string> scenarios;
  std::chrono::milliseconds timeout{60000};
  std::chrono::milliseconds grace{5000};
  int targetRank = 1;
  int code = 3;
  int iterations = 20;
  std::vector<std::string> axes;
  std::vector<int64_t> shape;
  bool haveShape = false;
};

std::vector<std::string> splitList(const std::string &text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ','))
    items.push_back(item);
  return items;
}

Options parseOptions(const std::vector<std::string> &argv) {
  Options options;
  auto value = [&](size_t &i) -> const std::string & {
    if (i + 1 >= argv.size())
      throw DistributedError(argv[i] + ": expected a value");
    return argv[++i];
  };
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string &arg = argv[i];
    if (arg == "--timeout-ms")
      options.timeout = std::chrono::milliseconds(std::stol(value(i)));
    else if (arg == "--grace-ms")
      options.grace = std::chrono::milliseconds(std::stol(value(i)));
    else if (arg == "--rank")
      options.targetRank = std::stoi(value(i));
    else if (arg == "--code")
      options.code = std::stoi(value(i));
    else if (arg == "--iterations")
      options.iterations = std::stoi(value(i));
    else if (arg == "--axes")
      options.axes = splitList(value(i));
    else if (arg == "--shape") {
      options.haveShape = true;
      for (const std::string &item : splitList(value(i)))
        options.shape.push_back(std::stoll(item));
    } else if (arg == "--marker")
      value(i); // only there to find the processes with pgrep
    else if (arg == "-h" || arg == "--help") {
      std::cout << "usage: snn-dist-check [--nproc N [--master-port P] "
                   "[--grace-ms G]] SCENARIO... [--timeout-ms T] [--rank R] "
                   "[--code C] [--iterations K] [--axes a,b --shape 2,2] "
                   "[--marker TEXT]\nscenarios: collectives mesh autograd "
                   "reducer p2p ops exit kill hang sleep p2p_kill p2p_hang\n";
      std::exit(0);
    } else if (!arg.empty() && arg[0] == '-')
      throw DistributedError("unknown flag " + arg);
    else
      options.scenarios.push_back(arg);
  }
  if (options.scenarios.empty())
    throw DistributedError("no scenario given (try --help)");
  return options;
}

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

std::string show(const at::Tensor &t) {
  std::ostringstream out;
  out << t.sizes() << " [";
  at::Tensor flat = t.detach().to(at::kDouble).reshape({-1}).contiguous();
  for (int64_t i = 0; i < flat.numel() && i < 16; ++i)
    out << (i ? ", " : "") << flat.data_ptr<double>()[i];
  if (flat.numel() > 16)
    out << ", ...";
  return out.str() + "]";
}

void expectEqual(const std::string &what, const at::Tensor &actual,
                 const at::Tensor &expected) {
  if (actual.sizes() != expected.sizes() ||
      !actual.to(at::kDouble).equal(expected.to(at::kDouble)))
    throw DistributedError("check failed: " + what + ": got " + show(actual) +
                           ", expected " + show(expected));
}

void expectClose(const std::string &what, const at::Tensor &actual,
                 const at::Tensor &expected, double rtol = 1e-5,
                 double atol = 1e-5) {
  if (actual.sizes() != expected.sizes() ||
      !at::allclose(actual.to(at::kDouble), expected.to(at::kDouble), rtol,
                    atol))
    throw DistributedError("check failed: " + what + ": got " + show(actual) +
                           ", expected " + show(expected));
}

void expectThrows(const std::string &what, const std::string &needle,
                  const std::function<void()> &body) {
  try {
    body();
  } catch (const DistributedError &e) {
    if (std::string(e.what()).find(needle) == std::string::npos)
      throw DistributedError("check failed: " + what + ": message '" +
                             e.what() + "' lacks '" + needle + "'");
    return;
  }
  throw DistributedError("check failed: " + what + ": no error");
}

at::Tensor range(int64_t n, at::ScalarType type = at::kFloat) {
  return at::arange(n, at::TensorOptions().dtype(type));
}

at::Tensor full(at::IntArrayRef shape, double value,
                at::ScalarType type = at::kFloat) {
  return at::full(shape, value, at::TensorOptions().dtype(type));
}

//===----------------------------------------------------------------------===//
// Numerics
//===----------------------------------------------------------------------===//

void checkCollectives(World &world) {
  const Group &g = world.group();
  const int n = g.size(), r = g.rank();
  const double rankSum = n * (n - 1) / 2.0;

  // all_reduce: sum, avg, max, min, product; float, double and int64.
  at::Tensor t = range(6) + 10.0 * r;
  allReduce(g, t);
  expectEqual("all_reduce sum", t, range(6) * n + 10.0 * rankSum);
  at::Tensor d = range(6, at::kDouble) + 10.0 * r;
  allReduce(g, d, ReduceOp::Avg);
  expectEqual("all_reduce avg (double)", d,
              (range(6, at::kDouble) * n + 10.0 * rankSum) / n);
  at::Tensor m = full({3}, r);
  allReduce(g, m, ReduceOp::Max);
  expectEqual("all_reduce max", m, full({3}, n - 1));
  m = full({3}, r);
  allReduce(g, m, ReduceOp::Min);
  expectEqual("all_reduce min", m, full({3}, 0));
  at::Tensor p = full({2}, r + 1);
  allReduce(g, p, ReduceOp::Product);
  double factorial = 1;
  for (int k = 1; k <= n; ++k)
    factorial *= k;
  expectEqual("all_reduce product", p, full({2}, factorial));
  at::Tensor i64 = range(4, at::kLong) * (r + 1);
  allReduce(g, i64);
  expectEqual("all_reduce int64", i64, range(4, at::kLong) * (n * (n + 1) / 2));
  expectThrows("avg of int64", "avg needs a floating point tensor", [&] {
    at::Tensor bad = range(2, at::kLong);
    allReduce(g, bad, ReduceOp::Avg);
  });

  // A non-contiguous view is reduced in place in its base.
  at::Tensor base = range(24).view({4, 6}) + r;
  at::Tensor view = base.t();
  allReduce(g, view);
  expectEqual("all_reduce of a transposed view", base,
              range(24).view({4, 6}) * n + rankSum);

  // Small tensors of a power-of-two group go by recursive doubling, larger ones and
  // other groups by Gloo's ring: both sum, and every member holds the same bits (the
  // replicas of a parameter must not drift apart).
  for (int64_t elements : {int64_t(1000), int64_t(300000)}) {
    at::manual_seed(11 + r);
    at::Tensor noise = at::randn({elements});
    at::Tensor reduced = noise.clone();
    allReduce(g, reduced);
    at::Tensor every = allGather(g, noise).view({n, elements});
    if (!at::allclose(reduced, every.sum(0), 1e-5, 1e-5))
      throw DistributedError("check failed: all_reduce sum of " + std::to_string(elements) +
                             " random floats");
    at::Tensor copies = allGather(g, reduced).view({n, elements});
    for (int q = 0; q < n; ++q)
      if (!at::equal(copies[q], reduced))
        throw DistributedError("check failed: rank " + std::to_string(q) + "'s all_reduce of " +
                               std::to_string(elements) + " floats differs from rank " +
                               std::to_string(r) + "'s");
  }

  // all_gather: rank order along dim 0; a 0-dim tensor gives [n].
  at::Tensor gathered = allGather(g, full({2, 3}, r));
  std::vector<at::Tensor> rows;
  for (int q = 0; q < n; ++q)
    rows.push_back(full({2, 3}, q));
  expectEqual("all_gather", gathered, at::cat(rows, 0));
  expectEqual("all_gather of a scalar", allGather(g, full({}, 7.0 * r)),
              range(n) * 7.0);
  // Into an existing flat buffer, synchronously and in the background while
  // another collective runs (fsdp's gather and prefetch).
  at::Tensor flat = at::empty({3 * n});
  allGatherInto(g, full({3}, r), flat);
  std::vector<at::Tensor> chunks;
  for (int q = 0; q < n; ++q)
    chunks.push_back(full({3}, q));
  expectEqual("all_gather into a buffer", flat, at::cat(chunks, 0));
  at::Tensor flatAsync = at::empty({3 * n});
  PendingCollective gathering = allGatherIntoAsync(g, full({3}, 2.0 * r), flatAsync);
  at::Tensor meanwhile = full({2}, r);
  allReduce(g, meanwhile);
  if (gathering.valid())
    gathering.wait();
  expectEqual("async all_gather into a buffer", flatAsync, at::cat(chunks, 0) * 2.0);
  expectEqual("all_reduce during an async all_gather", meanwhile, full({2}, rankSum));
  expectThrows("all_gather into a buffer of the wrong size", "cannot hold", [&] {
    at::Tensor small = at::empty({3 * n - 1});
    allGatherInto(g, full({3}, r), small);
  });

  // reduce_scatter: input[i] = 100 r + i on every row; chunk r of the sum.
  at::Tensor input =
      (range(2 * n).view({2 * n, 1}) + 100.0 * r).expand({2 * n, 3}).contiguous();
  at::Tensor chunk = reduceScatter(g, input);
  at::Tensor mine = range(2 * n).narrow(0, 2 * r, 2).view({2, 1});
  at::Tensor expectedChunk = (mine * n + 100.0 * rankSum).expand({2, 3});
  expectEqual("reduce_scatter sum", chunk, expectedChunk);
  expectEqual("reduce_scatter avg", reduceScatter(g, input, ReduceOp::Avg),
              expectedChunk / n);
  expectEqual("reduce_scatter max",
              reduceScatter(g, full({n, 2}, r), ReduceOp::Max),
              full({1, 2}, n - 1));
  if (n > 1)
    expectThrows("reduce_scatter of an indivisible tensor", "not divisible",
                 [&] { reduceScatter(g, range(n + 1)); });

  // Empty tensors: nothing to send, shapes still right.
  at::Tensor empty = at::zeros({0, 3});
  allReduce(g, empty);
  broadcast(g, empty, 0);
  expectEqual("all_gather of an empty tensor", allGather(g, empty),
              at::zeros({0, 3}));
  expectEqual("reduce_scatter of an empty tensor", reduceScatter(g, empty),
              at::zeros({0, 3}));
  expectEqual("all_gather of a [2, 0] tensor", allGather(g, at::zeros({2, 0})),
              at::zeros({2 * n, 0}));
  PendingCollective emptyAsync = allReduceAsync(g, empty);
  emptyAsync.wait();

  // broadcast from every root.
  for (int root = 0; root < n; ++root) {
    at::Tensor b = full({4}, 5.0 * r + 1);
    broadcast(g, b, root);
    expectEqual("broadcast from " + std::to_string(root), b,
                full({4}, 5.0 * root + 1));
  }
  expectThrows("broadcast from a bad root", "is not a rank of the group",
               [&] {
                 at::Tensor b = full({1}, 0);
                 broadcast(g, b, n);
               });
  barrier(g);

  // Async all_reduces in flight together, waited in order.
  at::Tensor a1 = full({1000}, r), a2 = full({10}, 2.0 * r);
  PendingCollective w1 = allReduceAsync(g, a1);
  PendingCollective w2 = allReduceAsync(g, a2, ReduceOp::Avg);
  w1.wait();
  w2.wait();
  expectEqual("async all_reduce", a1, full({1000}, rankSum));
  expectEqual("async all_reduce avg", a2, full({10}, 2.0 * rankSum / n));

  // A subgroup of the even ranks; every rank takes part in creating it.
  std::vector<int> evens;
  for (int q = 0; q < n; q += 2)
    evens.push_back(q);
  Group even = world.newGroup(evens, "even");
  if ((r % 2 == 0) != even.valid())
    throw DistributedError("check failed: membership of the even group");
  if (even.valid()) {
    at::Tensor e = full({2}, r);
    allReduce(even, e);
    double evenSum = 0;
    for (int q : evens)
      evenSum += q;
    expectEqual("all_reduce on the even subgroup", e, full({2}, evenSum));
    if (even.rank() != r / 2 || even.globalRank(even.rank()) != r)
      throw DistributedError("check failed: even group ranks");
  }
  // A group of three (not a power of two) reduces by Gloo.
  if (n >= 4) {
    Group three = world.newGroup({0, 1, 2}, "three");
    if (three.valid()) {
      at::Tensor s = full({5}, r + 1);
      allReduce(three, s);
      expectEqual("all_reduce on a group of three", s, full({5}, 6.0));
    }
  }
  barrier(g);
}

void checkOneMesh(World &world, const std::vector<std::string> &axes,
                  const std::vector<int64_t> &shape) {
  const int r = world.rank();
  Mesh mesh = Mesh::create(world, axes, shape);
  std::vector<int> coordinates = Mesh::coordinatesOf(shape, r);
  if (mesh.coordinates() != coordinates)
    throw DistributedError("check failed: mesh coordinates");
  for (size_t a = 0; a < axes.size(); ++a) {
    const Group &group = mesh.group(axes[a]);
    if (mesh.coordinate(axes[a]) != coordinates[a])
      throw DistributedError("check failed: coordinate along " + axes[a]);
    // Members: vary coordinate a, keep the others (row-major ranks).
    std::vector<int> expected;
    std::vector<int> c = coordinates;
    for (int k = 0; k < shape[a]; ++k) {
      c[a] = k;
      expected.push_back(Mesh::rankOf(shape, c));
    }
    if (group.ranks() != expected || group.rank() != coordinates[a])
      throw DistributedError("check failed: members of " + group.name());
    at::Tensor t = full({3}, r);
    allReduce(group, t);
    double sum = 0;
    for (int q : expected)
      sum += q;
    expectEqual("all_reduce over axis " + axes[a], t, full({3}, sum));
    std::vector<at::Tensor> rows;
    for (int q : expected)
      rows.push_back(full({1, 2}, q));
    expectEqual("all_gather over axis " + axes[a],
                allGather(group, full({1, 2}, r)), at::cat(rows, 0));
    expectEqual("reduce_scatter over axis " + axes[a],
                reduceScatter(group, full({group.size(), 2}, r)),
                full({1, 2}, sum));
  }
  barrier(world.group());
}

void checkMesh(World &world, const Options &options) {
  if (options.haveShape) {
    checkOneMesh(world, options.axes, options.shape);
    return;
  }
  const int64_t n = world.size();
  // Every layout of this world size that the planner produces: 1-D dp, a
  // 2-D (dp, tp) mesh, and one with an axis of size 1.
  checkOneMesh(world, {"dp"}, {n});
  if (n % 2 == 0) {
    checkOneMesh(world, {"dp", "tp"}, {n / 2, 2});
    checkOneMesh(world, {"dp", "pp", "tp"}, {n / 2, 1, 2});
    checkOneMesh(world, {"tp", "dp"}, {2, n / 2});
  }
}

void checkAutograd(World &world) {
  const Group &g = world.group();
  const int n = g.size(), r = g.rank();
  const double triangle = n * (n + 1) / 2.0; // sum of q + 1

  { // f: identity forward, all_reduce backward.
    at::Tensor x = (range(3) + r).set_requires_grad(true);
    at::Tensor y = copyToGroup(x, g);
    expectEqual("copyToGroup forward", y, x.detach());
    (y * (r + 1)).sum().backward();
    expectEqual("copyToGroup backward", x.grad(), full({3}, triangle));
  }
  { // g: all_reduce forward, identity backward.
    at::Tensor x = full({3}, r + 1).set_requires_grad(true);
    at::Tensor y = reduceFromGroup(x, g);
    expectEqual("reduceFromGroup forward", y.detach(), full({3}, triangle));
    (y * (r + 2)).sum().backward();
    expectEqual("reduceFromGroup backward", x.grad(), full({3}, r + 2));
  }
  { // all_gather along dim 1; replicated consumer: backward keeps the slice.
    at::Tensor x = full({2, 3}, r).set_requires_grad(true);
    at::Tensor y = gatherFromGroup(x, g, 1, GatherBackward::Slice);
    std::vector<at::Tensor> blocks;
    for (int q = 0; q < n; ++q)
      blocks.push_back(full({2, 3}, q));
    expectEqual("gatherFromGroup forward (dim 1)", y.detach(), at::cat(blocks, 1));
    at::Tensor w = range(2 * 3 * n).view({2, 3 * n});
    (y * w).sum().backward();
    expectEqual("gatherFromGroup backward (slice)", x.grad(),
                w.narrow(1, 3 * r, 3));
  }
  { // all_gather along dim 0, rank-specific consumer: reduce_scatter back.
    at::Tensor x = full({2, 3}, r).set_requires_grad(true);
    at::Tensor y = gatherFromGroup(x, g, 0, GatherBackward::ReduceScatter);
    at::Tensor w = range(2 * n * 3).view({2 * n, 3});
    (y * w * (r + 1)).sum().backward();
    expectEqual("gatherFromGroup backward (reduce_scatter)", x.grad(),
                w.narrow(0, 2 * r, 2) * triangle);
  }
  { // split forward, all_gather backward (dim -1).
    at::Tensor x = range(2 * 2 * n).view({2, 2 * n}).set_requires_grad(true);
    at::Tensor y = scatterToGroup(x, g, -1);
    expectEqual("scatterToGroup forward", y.detach(),
                x.detach().narrow(1, 2 * r, 2));
    (y * (r + 1)).sum().backward();
    std::vector<at::Tensor> blocks;
    for (int q = 0; q < n; ++q)
      blocks.push_back(full({2, 2}, q + 1));
    expectEqual("scatterToGroup backward", x.grad(), at::cat(blocks, 1));
  }
  { // reduce_scatter forward, all_gather backward.
    at::Tensor x = (range(2 * n * 2).view({2 * n, 2}) + r).set_requires_grad(true);
    at::Tensor y = reduceScatterToGroup(x, g, 0);
    expectEqual("reduceScatterToGroup forward", y.detach(),
                range(2 * n * 2).view({2 * n, 2}).narrow(0, 2 * r, 2) * n +
                    n * (n - 1) / 2.0);
    (y * (r + 1)).sum().backward();
    std::vector<at::Tensor> blocks;
    for (int q = 0; q < n; ++q)
      blocks.push_back(full({2, 2}, q + 1));
    expectEqual("reduceScatterToGroup backward", x.grad(), at::cat(blocks, 0));
  }
  { // A Megatron MLP (column- then row-parallel linear) equals the dense
    // one: output, input gradient and each weight shard's gradient.
    const int64_t hidden = 4 * n;
    at::Tensor X = at::remainder(range(5 * 6).view({5, 6}), 5) - 2;
    at::Tensor W1 = at::remainder(range(hidden * 6).view({hidden, 6}) * 7, 5) - 2;
    at::Tensor W2 = at::remainder(range(3 * hidden).view({3, hidden}) * 3, 5) - 2;
    at::Tensor dx = X.clone().set_requires_grad(true);
    at::Tensor dw1 = W1.clone().set_requires_grad(true);
    at::Tensor dw2 = W2.clone().set_requires_grad(true);
    at::Tensor dense = at::matmul(at::matmul(dx, dw1.t()), dw2.t());
    (dense * dense).sum().backward();

    const int64_t shard = hidden / n;
    at::Tensor tx = X.clone().set_requires_grad(true);
    at::Tensor tw1 = W1.narrow(0, r * shard, shard).clone().set_requires_grad(true);
    at::Tensor tw2 = W2.narrow(1, r * shard, shard).clone().set_requires_grad(true);
    at::Tensor h = at::matmul(copyToGroup(tx, g), tw1.t());
    at::Tensor out = reduceFromGroup(at::matmul(h, tw2.t()), g);
    (out * out).sum().backward();
    expectClose("tensor-parallel MLP output", out.detach(), dense.detach());
    expectClose("tensor-parallel MLP input grad", tx.grad(), dx.grad());
    expectClose("tensor-parallel MLP W1 shard grad", tw1.grad(),
                dw1.grad().narrow(0, r * shard, shard));
    expectClose("tensor-parallel MLP W2 shard grad", tw2.grad(),
                dw2.grad().narrow(1, r * shard, shard));
  }
  if (n > 1)
    expectThrows("scatterToGroup of an indivisible dim", "not divisible", [&] {
      scatterToGroup(range(n + 1).set_requires_grad(true), g, 0);
    });
  barrier(g);
}

/// What a CollectiveTrace heard: "kind:bytes" per collective, in order.
struct TraceLog {
  std::vector<std::string> events;
  CollectiveTrace trace() {
    return [this](CollectiveKind kind, int64_t bytes, double) {
      events.push_back(std::string(collectiveKindName(kind)) + ":" +
                       std::to_string(bytes));
    };
  }
  void expect(const std::string &what, std::vector<std::string> expected) {
    if (events != expected) {
      std::string got, want;
      for (const std::string &e : events)
        got += " " + e;
      for (const std::string &e : expected)
        want += " " + e;
      throw DistributedError("check failed: " + what + ": traced" + got +
                             ", expected" + want);
    }
    events.clear();
  }
};

/// Each differentiable collective reports the collectives it runs, forward
/// and backward, with the bytes it returns on this rank; a group of one
/// reports nothing.
void checkAutogradTraces(World &world) {
  const Group &g = world.group();
  const int n = g.size();
  const std::string f32 = std::to_string(4 * 6 * n); // [2, 3n] float32
  TraceLog log;
  auto leaf = [](at::IntArrayRef shape) {
    return at::ones(shape).set_requires_grad(true);
  };
  std::vector<std::string> none;
  auto some = [&](std::vector<std::string> events) {
    return n > 1 ? events : none;
  };
  copyToGroup(leaf({2, 3 * n}), g, log.trace()).sum().backward();
  log.expect("copyToGroup", some({"all_reduce:" + f32}));
  reduceFromGroup(leaf({2, 3 * n}), g, log.trace()).sum().backward();
  log.expect("reduceFromGroup", some({"all_reduce:" + f32}));
  gatherFromGroup(leaf({2, 3}), g, 1, GatherBackward::Slice, log.trace())
      .sum().backward();
  log.expect("gatherFromGroup (slice)", some({"all_gather:" + f32}));
  gatherFromGroup(leaf({2, 3}), g, 1, GatherBackward::ReduceScatter,
                  log.trace()).sum().backward();
  log.expect("gatherFromGroup (reduce_scatter)",
             some({"all_gather:" + f32, "reduce_scatter:24"}));
  scatterToGroup(leaf({2, 3 * n}), g, 1, log.trace()).sum().backward();
  log.expect("scatterToGroup", some({"all_gather:" + f32}));
  reduceScatterToGroup(leaf({2 * n, 3}), g, 0, log.trace()).sum().backward();
  log.expect("reduceScatterToGroup",
             some({"reduce_scatter:24", "all_gather:" + f32}));
  { // Without grad mode, forwards still report, backwards never run.
    c10::NoGradGuard noGrad;
    reduceFromGroup(at::ones({2, 3 * n}), g, log.trace());
    log.expect("reduceFromGroup without grad", some({"all_reduce:" + f32}));
  }
  barrier(g);
}

struct TinyModel {
  std::vector<at::Tensor> params; // unused, W1, b1, W2, b2

  static TinyModel make() {
    TinyModel m;
    auto init = [](at::Tensor t, int salt) {
      return (at::remainder(t * salt + 1, 3) - 1).set_requires_grad(true);
    };
    m.params.push_back(init(range(5), 1));
    m.params.push_back(init(range(32).view({8, 4}), 5));
    m.params.push_back(init(range(8), 7));
    m.params.push_back(init(range(24).view({3, 8}), 11));
    m.params.push_back(init(range(3), 13));
    return m;
  }
  TinyModel clone() const {
    TinyModel m;
    for (const at::Tensor &p : params)
      m.params.push_back(p.detach().clone().set_requires_grad(true));
    return m;
  }
  at::Tensor loss(const at::Tensor &x) const {
    at::Tensor h = at::matmul(x, params[1].t()) + params[2];
    at::Tensor out = at::matmul(h, params[3].t()) + params[4];
    return (out * out).sum();
  }
  void zeroGrad() {
    for (at::Tensor &p : params)
      if (p.grad().defined())
        p.mutable_grad().zero_();
  }
};

at::Tensor batch(int rank, int step) {
  return at::remainder(range(24).view({6, 4}) + rank * 3 + step, 3) - 1;
}

void checkReducer(World &world) {
  const Group &g = world.group();
  const int r = g.rank();
  for (size_t bucketBytes : {size_t(64), size_t(1) << 20}) {
    std::string label = " (buckets of " + std::to_string(bucketBytes) + " B)";
    TinyModel model = TinyModel::make();
    TinyModel plain = model.clone();
    GradReducerOptions options;
    options.bucketBytes = bucketBytes;
    GradBucketReducer reducer(g, model.params, options);
    const size_t buckets = reducer.bucketLayout().size();
    if (bucketBytes == 64 && buckets != 5)
      throw DistributedError("check failed: expected 5 buckets, got " +
                             std::to_string(buckets));
    if (bucketBytes > 64 && buckets != 1)
      throw DistributedError("check failed: expected 1 bucket");

    // Iteration 1 gives the unused parameter a local .grad (rank + 1): it
    // must be averaged like any other gradient.
    auto preset = [&](TinyModel &m, int step) {
      if (step == 1)
        m.params[0].mutable_grad() = full({5}, r + 1);
    };
    auto plainStep = [&](const std::vector<int> &steps) {
      plain.zeroGrad();
      preset(plain, steps.front());
      for (int step : steps)
        plain.loss(batch(r, step)).backward();
      for (at::Tensor &p : plain.params) {
        if (!p.grad().defined())
          p.mutable_grad() = at::zeros_like(p);
        allReduce(g, p.mutable_grad(), ReduceOp::Avg);
      }
    };
    auto compare = [&](const std::string &what) {
      for (size_t k = 0; k < model.params.size(); ++k)
        expectEqual(what + label + ": parameter " + std::to_string(k),
                    model.params[k].grad(), plain.params[k].grad());
    };

    // Two plain iterations: state resets between them.
    for (int step = 0; step < 2; ++step) {
      model.zeroGrad();
      preset(model, step);
      model.loss(batch(r, step)).backward();
      reducer.finish();
      plainStep({step});
      compare("iteration " + std::to_string(step));
      expectEqual("unused parameter, iteration " + std::to_string(step) + label,
                  model.params[0].grad(),
                  full({5}, step == 1 ? (g.size() + 1) / 2.0 : 0.0));
      // Every bucket but the unused parameter's filled up during backward.
      if (reducer.bucketsLaunchedDuringBackward() != buckets - 1)
        throw DistributedError(
            "check failed: " + std::to_string(reducer.bucketsLaunchedDuringBackward()) +
            " of " + std::to_string(buckets) +
            " buckets launched during backward" + label);
    }
    // Gradient accumulation over two backwards, synchronised once.
    model.zeroGrad();
    reducer.setSyncEnabled(false);
    model.loss(batch(r, 5)).backward();
    reducer.setSyncEnabled(true);
    model.loss(batch(r, 6)).backward();
    reducer.finish();
    plainStep({5, 6});
    compare("accumulation");
    // The unused parameter's gradient is the mean of zeros.
    expectEqual("unused parameter" + label, model.params[0].grad(),
                at::zeros({5}));
  }
  barrier(g);
}

/// What rank `from` sends with tag `tag`: a shape and values of its own.
at::Tensor message(int from, int tag) {
  return range(3 * (tag + 1) * 2).view({3, tag + 1, 2}) + 100.0 * from + tag;
}

/// A ring over `g`: every member sends four tensors (tags 0-3, different
/// shapes) to the next member and receives the previous member's, posting
/// its receives in the reverse order, before the sends start (so matching is
/// by tag, and a receive may wait for its data).
void checkRing(const Group &g, const std::string &label) {
  const int n = g.size(), r = g.rank();
  const int next = (r + 1) % n, prev = (r + n - 1) % n;
  std::vector<PendingTransfer> recvs(4), sends;
  for (int tag = 3; tag >= 0; --tag)
    recvs[size_t(tag)] = irecv(g, at::empty_like(message(prev, tag)), prev, tag);
  if (r == 0) // the others' receives are posted before the data leaves
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (int tag = 0; tag < 4; ++tag) {
    at::Tensor data = message(r, tag);
    // A transposed (non-contiguous) tensor for tag 1: sent through a copy.
    if (tag == 1)
      data = message(r, tag).transpose(0, 2).contiguous().transpose(0, 2);
    sends.push_back(isend(g, data, next, tag));
  }
  for (int tag = 0; tag < 4; ++tag) {
    recvs[size_t(tag)].wait();
    expectEqual(label + ": tag " + std::to_string(tag) + " from " +
                    std::to_string(prev),
                recvs[size_t(tag)].tensor(), message(prev, tag));
  }
  for (PendingTransfer &send : sends)
    send.wait();
}

void checkPointToPoint(World &world) {
  const Group &g = world.group();
  checkRing(g, "ring over the world");
  if (g.size() >= 4) {
    // A group of two non-adjacent ranks (a pp slice of a [2, N/2] mesh).
    Mesh mesh = Mesh::create(world, {"dp", "pp"}, {2, int64_t(g.size() / 2)});
    checkRing(mesh.group("dp"), "ring over " + mesh.group("dp").name());
  }
  // A receive dropped unwaited (an error path) is aborted, not waited for.
  auto start = std::chrono::steady_clock::now();
  { PendingTransfer dropped = irecv(g, at::empty({3}), (g.rank() + 1) % g.size(), 99); }
  if (std::chrono::steady_clock::now() - start > std::chrono::seconds(2))
    throw DistributedError("check failed: dropping an unwaited receive blocked");
  expectThrows("send to itself", "is not another member of the group",
               [&] { isend(g, range(2), g.rank(), 0); });
  expectThrows("tag out of range", "tag 1073741824 is outside [0, 2^30)",
               [&] { isend(g, range(2), (g.rank() + 1) % g.size(), kMaxTransferTag); });
  expectThrows("non-contiguous receive buffer", "must be contiguous", [&] {
    irecv(g, range(6).view({2, 3}).t(), (g.rank() + 1) % g.size(), 0);
  });
  barrier(g);
}

//===----------------------------------------------------------------------===//
// Failures
//===----------------------------------------------------------------------===//

void sleepSeconds(int seconds) {
  for (int i = 0; i < seconds * 10; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

int runScenario(World &world, const Options &options, const std::string &s) {
  const int r = world.rank();
  if (s == "collectives")
    checkCollectives(world);
  else if (s == "mesh")
    checkMesh(world, options);
  else if (s == "autograd") {
    checkAutograd(world);
    checkAutogradTraces(world);
  }
  else if (s == "reducer")
    checkReducer(world);
  else if (s == "p2p")
    checkPointToPoint(world);
  else if (s == "ops")
    snn::distcheck::checkCollectiveOps(world);
  else if (s == "exit") {
    // The target exits with --code; the others are busy (not in a
    // collective): the launcher must stop them.
    barrier(world.group());
    if (r == options.targetRank)
      return options.code;
    sleepSeconds(60);
  } else if (s == "kill") {
    // All-reduces in a loop; the target SIGKILLs itself in the middle.
    at::Tensor t = at::ones({1 << 18});
    for (int i = 0; i < 100000; ++i) {
      if (r == options.targetRank && i == options.iterations)
        ::raise(SIGKILL);
      allReduce(world.group(), t, ReduceOp::Avg);
    }
  } else if (s == "hang") {
    // The target never reaches the all_reduce (but stays alive).
    barrier(world.group());
    if (r == options.targetRank)
      sleepSeconds(120);
    at::Tensor t = at::ones({4});
    allReduce(world.group(), t);
  } else if (s == "p2p_kill" || s == "p2p_hang") {
    // Every other rank waits for a tensor from the target, which dies
    // (p2p_kill) or stays alive without sending (p2p_hang).
    barrier(world.group());
    if (r == options.targetRank) {
      if (s == "p2p_kill")
        ::raise(SIGKILL);
      sleepSeconds(120);
    }
    irecv(world.group(), at::empty({4}), options.targetRank, 5).wait();
  } else if (s == "size_mismatch") {
    // The target all-reduces a longer tensor than the others: the message
    // does not fit the buffer a peer posted for it, and Gloo's transport
    // thread throws, where nothing can catch it.
    barrier(world.group());
    at::Tensor t = at::ones({r == options.targetRank ? 1 << 14 : 16});
    allReduce(world.group(), t);
  } else if (s == "sleep") {
    sleepSeconds(120);
  } else {
    throw DistributedError("unknown scenario '" + s + "'");
  }
  std::cout << ("rank " + std::to_string(r) + ": " + s + " ok\n") << std::flush;
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    LauncherArguments launch = extractLauncherArguments(argc, argv);
    Options options = parseOptions(launch.argv);
    if (launch.nproc > 0) {
      LaunchOptions launchOptions;
      launchOptions.masterPort = launch.masterPort;
      launchOptions.masterAddr = launch.masterAddr;
      launchOptions.gracePeriod = options.grace;
      return launchLocalRanks(launch.nproc, launch.argv, launchOptions);
    }
    DistEnvironment env = readTorchrunEnvironment();
    InitOptions init;
    init.timeout = options.timeout;
    std::shared_ptr<World> world = World::initialize(env, init);
    try {
      for (const std::string &scenario : options.scenarios)
        if (int code = runScenario(*world, options, scenario))
          return code;
    } catch (const std::exception &e) {
      // Report before the world goes (its destructor may wait for Gloo).
      std::cerr << ("error: " + describeException(e) + "\n") << std::flush;
      world.reset();
      return 1;
    }
    return 0;
  } catch (const std::exception &e) {
    // One write: ranks share the terminal.
    std::cerr << ("error: " + describeException(e) + "\n") << std::flush;
    return 1;
  }
}
