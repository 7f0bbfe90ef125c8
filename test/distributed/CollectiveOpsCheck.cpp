//===- CollectiveOpsCheck.cpp - A partitioned program's ops on real ranks -===//
//
// The "ops" scenario of snn-dist-check: the runtime's kernels of all_reduce,
// backward_all_reduce, all_gather and all_slice (lib/Runtime/Execution/
// CollectiveOps.cpp), built from nodes as an artifact holds them and run over
// the groups of a MeshContext: forward values and input gradients against
// closed forms, and the communication counters they feed. On four ranks the
// mesh is [dp=2, tp=2] and the collectives also run over the dp axis.
//
//===----------------------------------------------------------------------===//

#include "CollectiveOpsCheck.h"

#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Distributed/Error.h"
#include "snn/Runtime/Execution/MeshContext.h"
#include "snn/Runtime/Execution/OpRegistry.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/full.h>
#include <c10/core/InferenceMode.h>

#include <sstream>

using namespace snn::runtime;
using snn::dist::DistributedError;

namespace snn::distcheck {

namespace {

at::Tensor full(at::IntArrayRef shape, double value) {
  return at::full(shape, value, at::TensorOptions().dtype(at::kFloat));
}

at::Tensor range(int64_t n) {
  return at::arange(n, at::TensorOptions().dtype(at::kFloat));
}

void expectEqual(const std::string &what, const at::Tensor &actual,
                 const at::Tensor &expected) {
  if (actual.sizes() != expected.sizes() || !actual.equal(expected)) {
    std::ostringstream out;
    out << "check failed: " << what << ": got " << actual.sizes() << " "
        << actual.reshape({-1}).slice(0, 0, 8) << ", expected "
        << expected.sizes() << " " << expected.reshape({-1}).slice(0, 0, 8);
    throw DistributedError(out.str());
  }
}

/// The kernel of a node `opType` over `meshAxis` (with `axis` for all_gather
/// and all_slice), run in training mode on `mesh`.
std::function<at::Tensor(const at::Tensor &)>
kernelOf(const std::string &opType, const std::string &meshAxis,
         const MeshContext &mesh, int64_t axis = -1) {
  Node node;
  node.name = opType + "." + meshAxis;
  node.opType = opType;
  node.domain = "spikemesh";
  node.outputs = {"y"};
  Attribute name;
  name.kind = Attribute::Kind::String;
  name.s = meshAxis;
  node.attributes["mesh_axis"] = name;
  if (axis >= 0) {
    Attribute dim;
    dim.kind = Attribute::Kind::Int;
    dim.i = axis;
    node.attributes["axis"] = dim;
  }
  Kernel kernel = OpRegistry::builtin().lookup(opType)->build(node);
  RunContext context;
  context.training = true;
  context.mesh = &mesh;
  return [kernel, context](const at::Tensor &x) { return kernel({x}, context); };
}

std::string describe(const std::vector<CommCount> &counts) {
  std::string text;
  for (const CommCount &c : counts)
    text += " " + c.kind + "/" + c.meshAxis + ":" + std::to_string(c.calls) +
            "x" + std::to_string(c.bytes);
  return text.empty() ? " none" : text;
}

void expectCounts(const std::string &what, const MeshContext &mesh,
                  const std::string &expected) {
  std::string got = describe(mesh.stats().counts());
  if (got != expected)
    throw DistributedError("check failed: " + what + ": counted" + got +
                           ", expected" + expected);
  mesh.stats().reset();
}

/// Each collective over `axis` (n members, this one at coordinate c): forward,
/// gradient and what it counted.
void checkAxis(const MeshContext &mesh, const std::string &axis) {
  const int64_t n = mesh.axisSize(axis), c = mesh.coordinate(axis);
  const double triangle = double(n * (n + 1)) / 2.0; // sum over q of q + 1
  const std::string bytes = std::to_string(2 * 3 * 4 * 4); // [2, 3, 4] f32
  const std::string gathered = std::to_string(2 * 3 * 2 * n * 4);
  { // all_reduce: sum forward, identity backward.
    at::Tensor x = full({2, 3, 4}, double(c + 1)).set_requires_grad(true);
    at::Tensor y = kernelOf("all_reduce", axis, mesh)(x);
    expectEqual("all_reduce forward over " + axis, y.detach(),
                full({2, 3, 4}, triangle));
    (y * double(c + 2)).sum().backward();
    expectEqual("all_reduce backward", x.grad(), full({2, 3, 4}, double(c + 2)));
    expectCounts("all_reduce", mesh, " all_reduce/" + axis + ":1x" + bytes);
  }
  { // backward_all_reduce: identity forward, sum backward.
    at::Tensor x = (range(24).view({2, 3, 4}) + double(c)).set_requires_grad(true);
    at::Tensor y = kernelOf("backward_all_reduce", axis, mesh)(x);
    expectEqual("backward_all_reduce forward", y.detach(), x.detach());
    (y * double(c + 1)).sum().backward();
    expectEqual("backward_all_reduce backward", x.grad(), full({2, 3, 4}, triangle));
    expectCounts("backward_all_reduce", mesh, " all_reduce/" + axis + ":1x" + bytes);
  }
  { // all_gather along 2: members' parts in coordinate order; backward keeps
    // this member's part of the gradient.
    at::Tensor x = full({2, 3, 2}, double(c)).set_requires_grad(true);
    at::Tensor y = kernelOf("all_gather", axis, mesh, 2)(x);
    std::vector<at::Tensor> parts;
    for (int64_t q = 0; q < n; ++q)
      parts.push_back(full({2, 3, 2}, double(q)));
    expectEqual("all_gather forward", y.detach(), at::cat(parts, 2));
    at::Tensor w = range(2 * 3 * 2 * n).view({2, 3, 2 * n});
    (y * w).sum().backward();
    expectEqual("all_gather backward", x.grad(), w.narrow(2, 2 * c, 2));
    expectCounts("all_gather", mesh, " all_gather/" + axis + ":1x" + gathered);
  }
  { // all_slice along 2: own part forward, all_gather of the gradients back.
    at::Tensor x = range(2 * 3 * 2 * n).view({2, 3, 2 * n}).set_requires_grad(true);
    at::Tensor y = kernelOf("all_slice", axis, mesh, 2)(x);
    expectEqual("all_slice forward", y.detach(), x.detach().narrow(2, 2 * c, 2));
    (y * double(c + 1)).sum().backward();
    std::vector<at::Tensor> parts;
    for (int64_t q = 0; q < n; ++q)
      parts.push_back(full({2, 3, 2}, double(q + 1)));
    expectEqual("all_slice backward", x.grad(), at::cat(parts, 2));
    expectCounts("all_slice", mesh, " all_gather/" + axis + ":1x" + gathered);
  }
  { // Inference (snn-run infer, eval): forward only, still counted.
    c10::InferenceMode guard;
    at::Tensor y = kernelOf("all_reduce", axis, mesh)(full({2, 3, 4}, double(c + 1)));
    expectEqual("all_reduce in inference mode", y, full({2, 3, 4}, triangle));
    y = kernelOf("backward_all_reduce", axis, mesh)(full({2, 3, 4}, 1.0));
    expectEqual("backward_all_reduce in inference mode", y, full({2, 3, 4}, 1.0));
    y = kernelOf("all_gather", axis, mesh, 2)(full({2, 3, 2}, double(c)));
    expectEqual("all_gather in inference mode", y.narrow(2, 2 * c, 2),
                full({2, 3, 2}, double(c)));
    y = kernelOf("all_slice", axis, mesh, 2)(range(2 * 3 * 2 * n).view({2, 3, 2 * n}));
    expectEqual("all_slice in inference mode", y,
                range(2 * 3 * 2 * n).view({2, 3, 2 * n}).narrow(2, 2 * c, 2));
    expectCounts("inference", mesh,
                 " all_gather/" + axis + ":1x" + gathered + " all_reduce/" + axis +
                     ":1x" + bytes);
  }
}

} // namespace

void checkCollectiveOps(dist::World &world) {
  const int n = world.size();
  schema::MeshSpec spec;
  if (n == 4) {
    spec.axes = {"dp", "tp"};
    spec.shape = {2, 2};
  } else {
    spec.axes = {"tp"};
    spec.shape = {n};
  }
  MeshContext mesh = MeshContext::create(&world, spec);
  for (const std::string &axis : spec.axes)
    checkAxis(mesh, axis);
  // An axis the mesh lacks names itself and the mesh's axes.
  bool refused = false;
  try {
    kernelOf("all_reduce", "pp", mesh)(full({2}, 1.0));
  } catch (const std::exception &e) {
    refused = std::string(e.what()).find("mesh axis 'pp' is not an axis") !=
              std::string::npos;
  }
  if (!refused)
    throw DistributedError("check failed: an all_reduce over an unknown mesh "
                           "axis was not refused");
  dist::barrier(world.group());
}

} // namespace snn::distcheck
