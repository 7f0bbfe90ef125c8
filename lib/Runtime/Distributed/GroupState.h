//===- GroupState.h - Internals of World and Group (private) ----*- C++ -*-===//
//
// Shared by the files behind World and Group (Rendezvous.cpp, World.cpp,
// Group.cpp, Work.cpp), PeerHealth.cpp, LauncherWatch.cpp, Collectives.cpp
// and PointToPoint.cpp. Includes the c10d headers (which pull in
// ATen/ATen.h); keep it out of public ones.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_LIB_RUNTIME_DISTRIBUTED_GROUPSTATE_H
#define SNN_LIB_RUNTIME_DISTRIBUTED_GROUPSTATE_H

#include "PeerHealth.h"
#include "snn/Runtime/Distributed/Error.h"
#include "snn/Runtime/Distributed/Group.h"
#include "snn/Runtime/Distributed/World.h"

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace gloo::transport {
class Device;
}

namespace snn::dist::detail {

struct GroupState;

struct WorldState {
  DistEnvironment env;
  InitOptions options;
  /// Prefixed client (or server, on rank 0 without an external store).
  c10::intrusive_ptr<c10d::Store> store;
  /// A second client for the heartbeat thread.
  c10::intrusive_ptr<c10d::Store> heartbeatStore;
  std::shared_ptr<gloo::transport::Device> glooDevice;

  std::mutex groupsMutex;
  /// Collectives started on every group created so far, by creation index
  /// (null: not a member). The heartbeat publishes them.
  std::vector<std::shared_ptr<std::atomic<uint64_t>>> sequences;

  // Heartbeat and lost-peer diagnosis: PeerHealth.cpp.
  std::chrono::milliseconds heartbeatInterval{1000};
  std::thread heartbeatThread;
  std::mutex heartbeatMutex;
  std::condition_variable heartbeatWake;
  bool heartbeatStop = false;
  std::atomic<bool> storeLost{false};
  std::atomic<bool> failedOnce{false};
  // The launcher watch (LauncherWatch.cpp): ranks of `snn-run --nproc`.
  std::thread launcherWatchThread;
  std::mutex launcherWatchMutex;
  std::condition_variable launcherWatchWake;
  bool launcherWatchStop = false;

  /// Every rank joined (the done handshake at destruction needs it).
  bool joined = false;

  ~WorldState();

  void startHeartbeat();
  void stopHeartbeat();
  /// Pings the launcher's store on a connection of its own; when it does
  /// not answer within launcherAnswerTimeout, prints "error: rank R: the
  /// launcher (pid P) stopped answering for S s" and ends the process.
  void startLauncherWatch();
  void stopLauncherWatch();
  /// "<beat> <index>:<started collectives> ..." for every member group.
  std::string heartbeatValue(uint64_t beat);

  /// Names the lost peer (see World.h) and throws.
  [[noreturn]] void failCollective(GroupState &group, const std::string &op,
                                   uint64_t sequence,
                                   const std::string &reason);
  /// A failed send or receive (PointToPoint.cpp): `what` ("recv from rank
  /// 1") with global rank `peer`. Marks this rank as a survivor, looks at the
  /// peer's heartbeat (dead, failed too, or alive without the matching call)
  /// and throws the one-line error naming it.
  [[noreturn]] void failTransfer(GroupState &group, const std::string &what,
                                 int peer, int64_t tag,
                                 const std::string &reason);

private:
  /// Marks this rank as a survivor, looks at the peers twice and publishes
  /// the suspects; or, with the store gone, blames the store's host.
  PeerDiagnosis diagnoseLostPeer(const GroupState &group,
                                 const std::vector<int> &peers,
                                 const std::string &where, uint64_t sequence);
  /// The peers' heartbeats and failure marks; clears `reachable` when the
  /// store does not answer.
  std::map<int, PeerView> snapshotPeers(const std::vector<int> &peers,
                                        int groupIndex, bool &reachable);
};

struct GroupState {
  std::shared_ptr<WorldState> world;
  /// Null for a group of one (no communication needed).
  c10::intrusive_ptr<c10d::ProcessGroup> pg;
  std::vector<int> ranks;
  int rank = 0;
  std::string name;
  int index = 0;
  Backend backend = Backend::Gloo;
  std::chrono::milliseconds timeout{60000};
  /// Collectives started on this group's process group (shared by groups
  /// that reuse it; the heartbeat publishes it under `index`).
  std::shared_ptr<std::atomic<uint64_t>> sequence;

  int size() const { return static_cast<int>(ranks.size()); }
  std::string prefix() const {
    return "rank " + std::to_string(world ? world->env.rank : 0) + ": ";
  }
};

// Work.cpp: starting collectives and waiting on their work.

/// Starts a collective: numbers it, calls `launch` (argument errors become
/// "rank R: OP on group G: ..."), and returns the work.
c10::intrusive_ptr<c10d::Work>
startCollective(GroupState &group, const std::string &op, uint64_t &sequence,
                const std::function<c10::intrusive_ptr<c10d::Work>()> &launch);

/// Waits for `work` with the group's timeout; a failure is diagnosed as a
/// lost peer (WorldState::failCollective).
void waitWork(GroupState &group, const c10::intrusive_ptr<c10d::Work> &work,
              const std::string &op, uint64_t sequence);

/// Adds a wait's duration to blockedSeconds().
void addBlocked(std::chrono::steady_clock::duration waited);

} // namespace snn::dist::detail

#endif // SNN_LIB_RUNTIME_DISTRIBUTED_GROUPSTATE_H
