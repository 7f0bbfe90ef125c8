//===- CollectiveOps.cpp - bias_add and the collectives of partitions ------===//
//
// The ops a partitioned program adds (docs/artifact-format.md, "Partitioned
// programs"). Each collective runs over the group of its `mesh_axis` in the
// run's MeshContext, as one of SNNDistributed's differentiable collectives,
// so backward does the conjugate communication:
//
//   all_reduce           forward sum           backward identity  (g)
//   backward_all_reduce  forward identity      backward sum       (f)
//   all_gather           forward concatenation backward own part
//   all_slice            forward own part      backward all_gather
//
// Every collective that communicates is counted in the mesh's CommStats,
// forward and backward, with the bytes it returns on this rank. Over an axis
// of size 1 a collective is the identity and counts nothing.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Distributed/AutogradCollectives.h"
#include "snn/Runtime/Execution/MeshContext.h"
#include "snn/Runtime/Execution/NodeAttributes.h"
#include "snn/Runtime/Execution/OpRegistry.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/TensorIO.h"
#include "snn/Schema/ArtifactOps.h"

#include <ATen/ops/add.h>

namespace snn::runtime {

namespace attr = schema::attr;
namespace op = schema::op;

namespace {

using Inputs = std::vector<at::Tensor>;

/// `axis` of a tensor of rank `rank` as a dimension index (negative counts
/// from the end); Error naming `what` otherwise.
int64_t dimensionOf(int64_t axis, const at::Tensor &x, const char *what) {
  int64_t rank = x.dim();
  if (axis < -rank || axis >= rank)
    throw Error(std::string(what) + " " + std::to_string(axis) +
                " is not a dimension of the input " + formatShape(x.sizes()));
  return axis < 0 ? axis + rank : axis;
}

Kernel buildBiasAdd(const Node &node) {
  int64_t axis = NodeAttributes(node).getInt(attr::kAxis);
  return [axis](const Inputs &in, const RunContext &) {
    const at::Tensor &x = in[0], &bias = in[1];
    int64_t dim = dimensionOf(axis, x, "axis");
    if (bias.dim() != 1 || bias.size(0) != x.size(dim))
      throw Error("bias has shape " + formatShape(bias.sizes()) +
                  ", expected [" + std::to_string(x.size(dim)) +
                  "] (dimension " + std::to_string(dim) + " of the input " +
                  formatShape(x.sizes()) + ")");
    std::vector<int64_t> shape(size_t(x.dim()), 1);
    shape[size_t(dim)] = x.size(dim);
    return at::add(x, bias.view(shape));
  };
}

/// The node's `mesh_axis` (a non-empty string).
std::string meshAxisOf(const Node &node) {
  NodeAttributes attributes(node);
  std::string axis = attributes.getString(attr::kMeshAxis, "");
  if (axis.empty())
    attributes.fail("missing attribute '" + std::string(attr::kMeshAxis) +
                    "' (the mesh axis whose group runs it)");
  return axis;
}

/// The group the collective runs over, or null when `axis` has size 1 (the
/// collective is then the identity).
const dist::Group *groupOf(const RunContext &context, const std::string &axis) {
  if (!context.mesh)
    throw Error("runs over mesh axis '" + axis +
                "' but this run has no device mesh (a partitioned artifact's "
                "program runs under snn-run on the artifact's ranks)");
  if (context.mesh->axisSize(axis) == 1)
    return nullptr;
  return &context.mesh->group(axis);
}

enum class Collective { AllReduce, BackwardAllReduce, AllGather, AllSlice };

at::Tensor runCollective(Collective kind, const at::Tensor &x,
                         const dist::Group &group, int64_t dim,
                         const dist::CollectiveTrace &trace) {
  switch (kind) {
  case Collective::AllReduce:
    return dist::reduceFromGroup(x, group, trace);
  case Collective::BackwardAllReduce:
    return dist::copyToGroup(x, group, trace);
  case Collective::AllGather:
    return dist::gatherFromGroup(x, group, dim, dist::GatherBackward::Slice,
                                 trace);
  case Collective::AllSlice:
    return dist::scatterToGroup(x, group, dim, trace);
  }
  return x;
}

/// A collective op: `withAxis` for all_gather and all_slice (attribute
/// `axis`, the dimension split over the group).
KernelBuilder collectiveBuilder(Collective kind, bool withAxis) {
  return [kind, withAxis](const Node &node) -> Kernel {
    std::string meshAxis = meshAxisOf(node);
    int64_t axis = withAxis ? NodeAttributes(node).getInt(attr::kAxis) : 0;
    return [kind, withAxis, meshAxis, axis](const Inputs &in,
                                            const RunContext &context) {
      const dist::Group *group = groupOf(context, meshAxis);
      int64_t dim = withAxis ? dimensionOf(axis, in[0], "axis") : 0;
      if (!group)
        return in[0];
      return runCollective(kind, in[0], *group, dim,
                           context.mesh->trace(meshAxis));
    };
  };
}

} // namespace

void registerCollectiveOps(OpRegistry &registry) {
  registry.add(op::kBiasAdd, buildBiasAdd);
  // Over an axis of size 1 each collective returns its input itself, and
  // backward_all_reduce and all_slice do at any size.
  const OutputStorage view = OutputStorage::MayViewInput;
  registry.add(op::kAllReduce, collectiveBuilder(Collective::AllReduce, false), 1, view);
  registry.add(op::kBackwardAllReduce,
               collectiveBuilder(Collective::BackwardAllReduce, false), 1, view);
  registry.add(op::kAllGather, collectiveBuilder(Collective::AllGather, true), 1, view);
  registry.add(op::kAllSlice, collectiveBuilder(Collective::AllSlice, true), 1, view);
}

} // namespace snn::runtime
