//===- PeerHealth.cpp - Heartbeat and lost-peer diagnosis -----------------===//
//
// See PeerHealth.h. The heartbeat thread and WorldState::failCollective.
//
//===----------------------------------------------------------------------===//

#include "PeerHealth.h"
#include "GroupState.h"
#include "Text.h"

#include <sstream>

namespace snn::dist::detail {

//===----------------------------------------------------------------------===//
// Keys and the pure diagnosis
//===----------------------------------------------------------------------===//

std::string heartbeatKey(int rank) {
  return "snn/heartbeat/" + std::to_string(rank);
}
std::string failedKey(int rank) { return "snn/failed/" + std::to_string(rank); }
std::string suspectsKey(int rank) {
  return "snn/suspects/" + std::to_string(rank);
}
std::string failedAtKey(int rank) { return "snn/failed_at/" + std::to_string(rank); }

void parseHeartbeat(const std::string &value, int groupIndex, PeerView &view) {
  std::istringstream in(value);
  view.hasBeat = static_cast<bool>(in >> view.beat);
  std::string entry;
  while (in >> entry) {
    size_t colon = entry.find(':');
    if (colon != std::string::npos &&
        entry.substr(0, colon) == std::to_string(groupIndex))
      view.sequence = std::stoull(entry.substr(colon + 1));
  }
}

static const PeerView &viewOf(const std::map<int, PeerView> &views, int peer) {
  static const PeerView kAbsent;
  auto found = views.find(peer);
  return found == views.end() ? kAbsent : found->second;
}

PeerDiagnosis diagnosePeers(const std::vector<int> &peers,
                            const std::map<int, PeerView> &before,
                            const std::map<int, PeerView> &after,
                            uint64_t sequence) {
  std::vector<int> dead, behind;
  for (int peer : peers) {
    const PeerView &a = viewOf(before, peer);
    const PeerView &b = viewOf(after, peer);
    if (b.reportedFailure)
      continue; // it noticed the failure too: a survivor
    if (!b.hasBeat || (a.hasBeat && a.beat == b.beat))
      dead.push_back(peer);
    else if (!b.sequence || *b.sequence < sequence)
      behind.push_back(peer);
  }
  PeerDiagnosis diagnosis;
  if (!dead.empty()) {
    diagnosis.suspects = dead;
    diagnosis.note = std::string("no heartbeat from ") +
                     (dead.size() == 1 ? "rank " : "ranks ") + joinInts(dead);
  } else if (!behind.empty()) {
    diagnosis.suspects = behind;
    diagnosis.note = (behind.size() == 1 ? "rank " : "ranks ") +
                     joinInts(behind) + (behind.size() == 1 ? " is" : " are") +
                     " alive but did not reach this collective";
  }
  return diagnosis;
}

//===----------------------------------------------------------------------===//
// Heartbeat
//===----------------------------------------------------------------------===//

std::string WorldState::heartbeatValue(uint64_t beat) {
  std::string value = std::to_string(beat);
  std::lock_guard<std::mutex> lock(groupsMutex);
  for (size_t i = 0; i < sequences.size(); ++i)
    if (sequences[i])
      value += " " + std::to_string(i) + ":" +
               std::to_string(sequences[i]->load());
  return value;
}

void WorldState::startHeartbeat() {
  heartbeatThread = std::thread([this] {
    uint64_t beat = 0;
    std::unique_lock<std::mutex> lock(heartbeatMutex);
    while (!heartbeatStop) {
      lock.unlock();
      try {
        heartbeatStore->set(heartbeatKey(env.rank),
                            toBytes(heartbeatValue(++beat)));
      } catch (const std::exception &) {
        storeLost = true;
        return;
      }
      lock.lock();
      heartbeatWake.wait_for(lock, heartbeatInterval,
                             [this] { return heartbeatStop; });
    }
  });
}

void WorldState::stopHeartbeat() {
  {
    std::lock_guard<std::mutex> lock(heartbeatMutex);
    heartbeatStop = true;
  }
  heartbeatWake.notify_all();
  if (heartbeatThread.joinable())
    heartbeatThread.join();
}

//===----------------------------------------------------------------------===//
// Diagnosis of a failed collective
//===----------------------------------------------------------------------===//

std::map<int, PeerView> WorldState::snapshotPeers(const std::vector<int> &peers,
                                                  int groupIndex,
                                                  bool &reachable) {
  std::map<int, PeerView> views;
  for (int peer : peers) {
    PeerView view;
    try {
      if (store->check({heartbeatKey(peer)}))
        parseHeartbeat(fromBytes(store->get(heartbeatKey(peer))), groupIndex,
                       view);
      view.reportedFailure = store->check({failedKey(peer)});
    } catch (const std::exception &) {
      // A store that did not answer (gone, or across a partition) is asked
      // nothing more: each further read would wait out the timeout again,
      // once per peer, before this rank could report.
      view.reachable = false;
      reachable = false;
      views[peer] = view;
      break;
    }
    views[peer] = view;
  }
  return views;
}

PeerDiagnosis WorldState::diagnoseLostPeer(const GroupState &group,
                                           const std::vector<int> &peers,
                                           const std::string &where,
                                           uint64_t sequence) {
  bool reachable = !storeLost;
  if (reachable) {
    try {
      store->set(failedKey(env.rank), toBytes(where));
    } catch (const std::exception &) {
      reachable = false;
    }
  }
  std::map<int, PeerView> before, after;
  if (reachable)
    before = snapshotPeers(peers, group.index, reachable);
  if (reachable) {
    // Long enough for every live peer to beat at least twice.
    std::this_thread::sleep_for(3 * heartbeatInterval);
    after = snapshotPeers(peers, group.index, reachable);
  }

  PeerDiagnosis diagnosis;
  if (!reachable) {
    if (!env.externalStore && env.rank != 0) {
      diagnosis.suspects.push_back(0);
      diagnosis.note = "the rendezvous store on rank 0 is gone or unreachable";
    } else {
      diagnosis.note = "the rendezvous store at " + env.masterAddr + ":" +
                       std::to_string(env.masterPort) + " is gone or unreachable";
    }
    return diagnosis;
  }
  diagnosis = diagnosePeers(peers, before, after, sequence);
  if (!diagnosis.suspects.empty()) {
    // For the launcher's report (the cause, not the consequences).
    try {
      store->set(suspectsKey(env.rank), toBytes(joinInts(diagnosis.suspects)));
    } catch (const std::exception &) {
    }
  }
  return diagnosis;
}

void WorldState::failCollective(GroupState &group, const std::string &op,
                                uint64_t sequence, const std::string &reason) {
  failedOnce = true;
  const std::string where = op + " (group " + group.name + ", #" +
                            std::to_string(sequence) + ")";
  const std::string prefix = "rank " + std::to_string(env.rank) + ": ";
  std::vector<int> peers;
  for (int r : group.ranks)
    if (r != env.rank)
      peers.push_back(r);

  if (!options.heartbeat || !store || peers.empty())
    throw DistributedError(prefix + "lost peer (rank ?) during " + where +
                           ": " + reason);

  const PeerDiagnosis diagnosis =
      diagnoseLostPeer(group, peers, where, sequence);
  const std::vector<int> &suspects = diagnosis.suspects;
  std::string who;
  if (suspects.empty())
    who = "rank ?";
  else
    who = (suspects.size() == 1 ? "rank " : "ranks ") + joinInts(suspects) +
          "?";
  const std::string &note = diagnosis.note;
  throw DistributedError(prefix + "lost peer (" + who + ") during " + where +
                         ": " + reason + (note.empty() ? "" : " [" + note + "]"));
}

void WorldState::failTransfer(GroupState &group, const std::string &what,
                              int peer, int64_t tag, const std::string &reason) {
  failedOnce = true;
  const std::string where = what + " (group " + group.name + ", tag " +
                            std::to_string(tag) + ")";
  const std::string prefix = "rank " + std::to_string(env.rank) + ": lost peer rank " +
                             std::to_string(peer) + " during " + where + ": " + reason;
  if (!options.heartbeat || !store)
    throw DistributedError(prefix);
  // Sequence 0: a transfer is not a collective, so a live peer is never
  // "behind"; it is dead, failed too, or alive without the matching call.
  PeerDiagnosis diagnosis = diagnoseLostPeer(group, {peer}, where, 0);
  std::string note = diagnosis.note;
  if (note.empty()) {
    bool failedToo = false;
    try {
      failedToo = store->check({failedKey(peer)});
    } catch (const std::exception &) {
    }
    note = "rank " + std::to_string(peer) +
           (failedToo ? " failed too"
                      : " is alive but did not post the matching send or recv");
    if (!failedToo) {
      try {
        store->set(suspectsKey(env.rank), toBytes(std::to_string(peer)));
      } catch (const std::exception &) {
      }
    }
  }
  throw DistributedError(prefix + " [" + note + "]");
}

} // namespace snn::dist::detail
