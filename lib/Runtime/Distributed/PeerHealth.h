//===- PeerHealth.h - Heartbeat, lost-peer diagnosis (private) -*- C++ -*-===//
//
// Every rank publishes a heartbeat in the rendezvous store (its own thread
// and store connection, WorldState::startHeartbeat): a counter and, for
// each group it belongs to, how many collectives it has started there.
// When a collective fails, WorldState::failCollective (PeerHealth.cpp) marks
// this rank as a survivor (snn/failed/<rank>), looks at the peers' heartbeats
// twice, three heartbeat intervals apart, and names the peer that is dead
// (no heartbeat, or one that stopped) or behind (alive, but it never started
// this collective); it writes that verdict to snn/suspects/<rank> for the
// launcher (FailureAttribution.cpp), which reads both keys.
//
// Only the standard library here: the decision itself (diagnosePeers) is a
// pure function, tested on its own.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_LIB_RUNTIME_DISTRIBUTED_PEERHEALTH_H
#define SNN_LIB_RUNTIME_DISTRIBUTED_PEERHEALTH_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace snn::dist::detail {

/// Store keys, under the job's prefix.
/// "<beat> <group index>:<collectives started> ..." of a live rank.
std::string heartbeatKey(int rank);
/// Set by a rank that saw a collective fail (a consequence, not the cause).
std::string failedKey(int rank);
/// The ranks that rank blamed, "2" or "1, 3".
std::string suspectsKey(int rank);
/// When the rank failed (steady-clock nanoseconds, written before its error
/// line; World::recordFailure): the launcher names the rank that failed first.
std::string failedAtKey(int rank);

/// One peer as the store shows it at one moment.
struct PeerView {
  bool reachable = true;            // the store answered
  bool hasBeat = false;
  uint64_t beat = 0;
  std::optional<uint64_t> sequence; // collectives started on the group
  bool reportedFailure = false;     // it saw the failure itself
};

/// Reads a heartbeat value into `view`: the beat, and the collectives
/// started on group `groupIndex` (left unset when it is not listed).
void parseHeartbeat(const std::string &value, int groupIndex, PeerView &view);

/// Who is to blame, and why ("no heartbeat from rank 2", ...).
struct PeerDiagnosis {
  std::vector<int> suspects;
  std::string note;
};

/// From two views of the peers taken three heartbeat intervals apart, for
/// collective number `sequence`: a peer that reported the failure itself is
/// a survivor; one with no heartbeat, or a beat that did not move, is dead;
/// a live one that has not started collective `sequence` is behind. The
/// dead are named if there are any, else those behind; else nobody.
PeerDiagnosis diagnosePeers(const std::vector<int> &peers,
                            const std::map<int, PeerView> &before,
                            const std::map<int, PeerView> &after,
                            uint64_t sequence);

} // namespace snn::dist::detail

#endif // SNN_LIB_RUNTIME_DISTRIBUTED_PEERHEALTH_H
