//===- Environment.h - Rank, world size and rendezvous address --*- C++ -*-===//
//
// A rank learns who it is from environment variables, the same ones torchrun
// sets: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT. `snn-run --nproc N` (Launcher.h) sets them for its children,
// so a rank started by either (or by any scheduler that sets them) runs the
// same code. See docs/distributed.md.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_DISTRIBUTED_ENVIRONMENT_H
#define SNN_RUNTIME_DISTRIBUTED_ENVIRONMENT_H

#include <functional>
#include <optional>
#include <string>

namespace snn::dist {

/// Where this process sits in the job and where the rendezvous store is.
struct DistEnvironment {
  int rank = 0;
  int worldSize = 1;
  /// Rank on this host; LOCAL_RANK, or RANK when LOCAL_RANK is not set.
  int localRank = 0;
  /// Ranks on this host; LOCAL_WORLD_SIZE, or WORLD_SIZE when not set.
  int localWorldSize = 1;
  std::string masterAddr = "127.0.0.1";
  int masterPort = 0;
  /// True when the TCPStore server runs outside the ranks (the `--nproc`
  /// launcher, torchrun's agent: TORCHELASTIC_USE_AGENT_STORE=True): every
  /// rank is then a client. Otherwise rank 0 hosts the store.
  bool externalStore = false;
  /// Prefix of every key in the store: "/worker/attempt_<n>" under an agent
  /// store (n = TORCHELASTIC_RESTART_COUNT), as torch.distributed does.
  std::string storePrefix;
  /// SNN_JOB_SECRET: set by `snn-run --nproc` for its ranks, whose store
  /// (the launcher's) answers only clients that present it. Empty under
  /// torchrun or by hand: the ranks then use c10d's TCPStore.
  std::string jobSecret;
  /// SNN_LAUNCHER_PID: the launcher that hosts the store (0: not set). A
  /// rank names it when it stops answering.
  int launcherPid = 0;

  /// Whether every rank runs on this host and talks over loopback.
  bool singleHost() const;
};

/// Looks an environment variable up; nullopt when it is not set.
using EnvironmentLookup =
    std::function<std::optional<std::string>(const std::string &)>;

/// The process environment (getenv).
EnvironmentLookup processEnvironment();

/// Reads the torchrun variables. RANK, WORLD_SIZE, MASTER_ADDR and
/// MASTER_PORT are required; LOCAL_RANK and LOCAL_WORLD_SIZE are optional.
/// Throws DistributedError naming every missing variable, or the variable
/// and value that is not a valid integer, rank or port.
DistEnvironment readTorchrunEnvironment();
DistEnvironment readTorchrunEnvironment(const EnvironmentLookup &lookup);

/// Whether RANK or WORLD_SIZE is set (a launcher started this process).
bool torchrunEnvironmentPresent();
bool torchrunEnvironmentPresent(const EnvironmentLookup &lookup);

/// One process, rank 0 of 1: no store, no process group needed.
DistEnvironment singleProcessEnvironment();

} // namespace snn::dist

#endif // SNN_RUNTIME_DISTRIBUTED_ENVIRONMENT_H
