//===- DeviceProfile.h - What a machine measured, for the planner -*- C++ -*-===//
//
// `snn-run calibrate` measures this machine (compute kernels at the sizes
// models use, collectives over its process groups) and writes a device
// profile; `snn-compile --device-profile FILE` reads it, so the planner's
// times are this machine's, not constants. The format is defined here once
// and used by both tools (docs/artifact-format.md, "Device profile").
//
// Compute curves: for each kind, the seconds of one training call (forward
// and backward) at several sizes, the size in the kind's unit of work:
//   gemm, conv2d          forward FLOPs as the planner counts them (2 per
//                         multiply-add)
//   neuron                elements of the [T, N, ...] input (a LIF layer)
//   batch_norm, max_pool  elements of the input
//   elementwise           elements of the output (add, dropout, ...)
// Communication curves: for each collective kind and group size, the seconds
// of one call at several tensor sizes (bytes of the whole tensor: the
// all-reduced one, the gathered output, the scattered input, the message).
// Each may also hold the CPU one call costs all its ranks (`cpu_points`).
// Model steps (optional, `snn-run calibrate --model DIR`): one model's whole
// training step in one process, by samples per step; the planner scales its
// op curves to match them for that model (docs/planner.md).
// Waits between computes (optional, jobs of 4 ranks and more): what a rank
// waits in a pair's all_reduce after computing while every rank computes.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_SCHEMA_DEVICEPROFILE_H
#define SNN_SCHEMA_DEVICEPROFILE_H

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace snn::schema {

inline constexpr const char *kDeviceProfileFormat = "spikemesh-device-profile";
inline constexpr int kDeviceProfileVersion = 1;
/// Larger files are not a profile (the reader refuses them unread).
inline constexpr size_t kMaxDeviceProfileBytes = size_t(4) << 20;
/// The name that stands for the built-in profile wherever a profile's file is named: this
/// project's reference machine kind (2 logical CPUs of an x86-64 server VM, Gloo), measured
/// by `snn-run calibrate` and compiled in (BuiltinDeviceProfile.json). A plan without a
/// measured profile of its own machine uses it: its times are within a small factor on that
/// kind of machine and say nothing precise about another.
inline constexpr const char *kBuiltinDeviceProfile = "builtin";

/// The kinds of compute curves and of communication curves a profile holds.
inline constexpr const char *kComputeKinds[] = {"gemm",       "conv2d",   "neuron",
                                                "batch_norm", "max_pool", "elementwise"};
inline constexpr const char *kCommunicationKinds[] = {"all_reduce", "all_gather",
                                                      "reduce_scatter", "send_recv"};

/// A malformed or unusable profile; the message names the file and the field.
class DeviceProfileError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Above this share of the CPUs' time taken by the hypervisor for other tenants while
/// calibrate measured (`machine.steal`), its times are a slow spell's: calibrate warns and
/// the planner says so (a 4-rank step measured 2-5x its undisturbed time at 24-29 %).
constexpr double kDisturbingStealShare = 0.05;

/// Which machine measured the profile: the planner's numbers hold there.
struct MachineIdentity {
  std::string cpu;         ///< /proc/cpuinfo "model name"
  int64_t logicalCpus = 0; ///< CPUs the OS offers
  int64_t threads = 0;     ///< intra-op threads per rank during the measurement
  std::string backend;     ///< process-group backend of the collectives ("gloo")
  /// The share (0-1) of the CPUs' time the hypervisor gave to others while measuring
  /// (/proc/stat's steal); negative where unknown (no /proc/stat, an older profile).
  double stealShare = -1;
};

struct ProfilePoint {
  double size = 0;    ///< work (compute) or bytes (communication) of one call
  double seconds = 0; ///< median time of one call
};

struct ComputeCurve {
  std::string kind; ///< one of kComputeKinds
  std::vector<ProfilePoint> points; ///< ascending size, at least one
};

struct CommunicationCurve {
  std::string kind;  ///< one of kCommunicationKinds
  int64_t ranks = 2; ///< group size
  std::vector<ProfilePoint> points; ///< ascending bytes, at least one
  /// Optional, at the sizes of `points`: the CPU seconds (every thread of a
  /// process, the backend's included) that one call costs all its ranks
  /// together; for send_recv, one message's two ends. A pipeline's messages
  /// and collectives take CPU from the ranks that compute (docs/planner.md).
  std::vector<ProfilePoint> cpuPoints;
};

/// The steps of a model's data-parallel replicas: `ranks` processes of this
/// machine at once, as the trainer makes them (BatchNorm synchronised over all of
/// them, its blocks node by node, the step's metrics and the gradients' bucketed
/// all-reduce); size: samples per rank and step, as rank 0 measured them.
struct ReplicatedStepCurve {
  int64_t ranks = 2;
  std::vector<ProfilePoint> points; ///< ascending samples per rank, at least one
};

/// One model's whole training step (forward, loss, backward, SGD update) in
/// one process, at several batch sizes. The model is recognised by its
/// trainable parameter count and its input shape (batch dimension -1).
struct ModelStepCurve {
  std::string model; ///< where it was measured from (the artifact directory)
  int64_t parameters = 0;
  std::vector<int64_t> input;
  std::vector<ProfilePoint> points; ///< size: samples per step, ascending
  /// The same steps with every spiking block run node by node (as SyncBatchNorm,
  /// fsdp's gathering and recomputation run them); empty when no block ran.
  std::vector<ProfilePoint> nodeByNodePoints;
  /// The same fused steps each right after other work (other models' and sizes' steps):
  /// their data out of the caches, as a pipeline stage's tick follows other microbatches'
  /// ticks; empty in profiles that did not measure them.
  std::vector<ProfilePoint> coldPoints;
  /// Ascending ranks (what the one-process steps lack: the replicas' waits for
  /// each other in their collectives).
  std::vector<ReplicatedStepCurve> replicated;
};

/// How long a rank waits in a collective that follows its compute while every rank of the
/// job computes (`snn-run calibrate` on 4 ranks and more): the job's ranks in pairs, each
/// pair alternating a compute with an all_reduce of `bytes` between its two ranks, all
/// pairs at once. With more ranks than CPUs a rank's peer gets its share of them later:
/// the wait grows with the compute before the call, beyond the collective's own time.
struct WaitBetweenComputesCurve {
  int64_t ranks = 4;  ///< the job's ranks (even, at least 2)
  int64_t bytes = 0;  ///< the all_reduced tensor
  /// size: seconds of one rank's compute between calls (measured alone); seconds: the
  /// mean time a rank waits in the all_reduce (both ranks of a pair averaged). Ascending.
  std::vector<ProfilePoint> points;
  /// pipeline_messages only, where measured: at each point's size, the CPU seconds one
  /// message took from its two ranks together beyond their compute (their transfers and
  /// the backend's threads). Empty otherwise.
  std::vector<ProfilePoint> cpuPoints;
};

struct DeviceProfile {
  std::string format = kDeviceProfileFormat;
  int version = kDeviceProfileVersion;
  std::string createdBy; ///< "snn-run calibrate 0.1.0"
  MachineIdentity machine;
  std::vector<ComputeCurve> compute;
  std::vector<CommunicationCurve> communication;
  std::vector<ModelStepCurve> modelSteps;
  /// Optional (absent from profiles of fewer than 4 ranks); each ranks once.
  std::vector<WaitBetweenComputesCurve> waitsBetweenComputes;
  /// Optional; each ranks once. What a two-stage pipeline's tick takes beyond its compute,
  /// its ranks in pairs, all pairs at once, 1F1B over 8 microbatches: size is the seconds
  /// of one tick's compute (a forward and its backward, measured alone), seconds the median
  /// over steps of what a tick took beyond it (its message and the wake of the rank that
  /// waited for it), and bytes each message's tensor.
  std::vector<WaitBetweenComputesCurve> pipelineMessages;

  /// The curve of `kind`, or null.
  const ComputeCurve *computeCurve(const std::string &kind) const;
};

/// Parses and validates a profile (every kind of kComputeKinds present once,
/// sizes ascending and positive, seconds positive and finite; communication
/// curves of known kinds, each (kind, ranks) once; model steps, when present,
/// with positive parameter counts, one -1 in the input shape and each model
/// once; waits between computes of even jobs of at least 2 ranks, each once,
/// of positive bytes). Throws
/// DeviceProfileError naming `name` and the field.
DeviceProfile parseDeviceProfile(const std::string &text, const std::string &name);
/// The built-in profile's JSON text.
const std::string &builtinDeviceProfileText();
/// Reads `path` (a regular file below kMaxDeviceProfileBytes), then parses it; `path`
/// kBuiltinDeviceProfile parses the built-in profile.
DeviceProfile readDeviceProfile(const std::string &path);
/// The same for callers built without exceptions (the compiler's passes): the
/// profile, or nullopt with the message in `error`.
std::optional<DeviceProfile> tryReadDeviceProfile(const std::string &path, std::string &error);
/// Two-space indented JSON, newline-terminated.
std::string formatDeviceProfile(const DeviceProfile &profile);

/// This machine as calibrate records it (threads and backend left empty).
MachineIdentity thisMachine();
/// Empty when `measured` and `here` are the same machine (CPU model and
/// logical CPU count), else what differs, e.g. "CPU 'A' (2 CPUs) against
/// this machine's 'B' (16 CPUs)".
std::string machineDifference(const MachineIdentity &measured, const MachineIdentity &here);

} // namespace snn::schema

#endif // SNN_SCHEMA_DEVICEPROFILE_H
