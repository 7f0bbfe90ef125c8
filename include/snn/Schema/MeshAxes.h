//===- MeshAxes.h - The names of the device mesh's axes ---------*- C++ -*-===//
//
// The planner names the axes of the mesh it writes into the manifest
// (`mesh.axes`), the topology a user gives (`--topology dp=2,tp=2`) uses the
// same names, and the runtime finds its groups by them. The Python package
// reads them from here through its binding (spikemesh.planning.TOPOLOGY_ORDER
// is `_spikemesh.topology_order`).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_SCHEMA_MESHAXES_H
#define SNN_SCHEMA_MESHAXES_H

namespace snn::schema::meshaxis {

/// Replicas that split the global batch (dp, ZeRO, fsdp).
inline constexpr const char *kDataParallel = "dp";
/// Ranks that split a layer's weights (tp, fsdp_tp).
inline constexpr const char *kTensorParallel = "tp";
/// Pipeline stages.
inline constexpr const char *kPipeline = "pp";
/// Virtual pipeline stages per rank: a topology entry, never a mesh axis.
inline constexpr const char *kVirtualPipeline = "vpp";

/// In the order a topology lists them (ordered dp, tp, pp, vpp).
inline constexpr const char *kTopologyOrder[] = {kDataParallel, kTensorParallel, kPipeline,
                                                 kVirtualPipeline};

} // namespace snn::schema::meshaxis

#endif // SNN_SCHEMA_MESHAXES_H
