//===- FailureAttribution.cpp - Which rank made the launch fail -----------===//
//
// After supervision: the launcher's store says which failed ranks only
// reported a lost peer (snn/failed/<rank>) and whom they blamed
// (snn/suspects/<rank>); PeerHealth.cpp writes both.
//
//===----------------------------------------------------------------------===//

#include "LauncherWatch.h"
#include "PeerHealth.h"
#include "RankSupervisor.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <iostream>
#include <map>

namespace snn::dist::detail {

namespace {

// Failed on its own account: neither stopped by the launcher nor a rank
// that reported a lost peer.
bool isConsequence(const RankProcess &rank, c10d::Store &store) {
  if (rank.signaledByLauncher)
    return true;
  try {
    return store.check({failedKey(rank.rank)});
  } catch (const std::exception &) {
    return false;
  }
}

// When the rank failed: the time it recorded before its error line
// (World::recordFailure), else when the launcher saw it exit. A rank that
// fails cleanly can exit after a peer that its failure killed.
std::chrono::steady_clock::time_point failureTime(const RankProcess &rank,
                                                  c10d::Store &store) {
  try {
    std::string key = failedAtKey(rank.rank);
    if (store.check({key})) {
      std::vector<uint8_t> value = store.get(key);
      std::chrono::nanoseconds at(std::stoll(std::string(value.begin(), value.end())));
      return std::chrono::steady_clock::time_point(at);
    }
  } catch (const std::exception &) {
  }
  return rank.failedAt;
}

// The rank each failed survivor blamed, when it blamed exactly one: lost
// rank -> the ranks that lost it.
std::map<int, std::vector<int>>
blamedRanks(const std::vector<RankProcess> &ranks, c10d::Store &store) {
  std::map<int, std::vector<int>> blamedBy;
  for (const RankProcess &rank : ranks) {
    if (!rank.failed() || rank.signaledByLauncher)
      continue;
    try {
      std::string key = suspectsKey(rank.rank);
      if (!store.check({key}))
        continue;
      std::vector<uint8_t> value = store.get(key);
      std::string list(value.begin(), value.end());
      if (list.find(',') == std::string::npos && !list.empty())
        blamedBy[std::stoi(list)].push_back(rank.rank);
    } catch (const std::exception &) {
    }
  }
  return blamedBy;
}

// "rank L stopped answering (ranks A, B lost it in a collective or transfer)[; ...]".
std::string describeLostRank(const RankProcess &lost,
                             const std::vector<int> &by) {
  std::string ranks;
  for (size_t i = 0; i < by.size(); ++i)
    ranks += (i ? ", " : "") + std::to_string(by[i]);
  std::string report = "rank " + std::to_string(lost.rank) +
                       " stopped answering (" +
                       (by.size() == 1 ? "rank " : "ranks ") + ranks +
                       " lost it in a collective or transfer)";
  if (lost.signaledByLauncher)
    report += "; stopped by the launcher";
  else if (lost.exited && !lost.failed())
    report += "; it had exited with code 0";
  return report;
}

} // namespace

FailureAttribution attributeFailure(const std::vector<RankProcess> &ranks,
                                    const SupervisionOutcome &outcome,
                                    c10d::Store &store) {
  FailureAttribution result;
  std::chrono::steady_clock::time_point first;
  for (int rank : outcome.failureOrder) {
    if (isConsequence(ranks[rank], store))
      continue;
    std::chrono::steady_clock::time_point at = failureTime(ranks[rank], store);
    if (result.cause < 0 || at < first)
      result.cause = rank, first = at;
  }
  if (result.cause >= 0)
    return result;
  // Only consequences, and no interrupt: e.g. a hung rank that the others
  // timed out on, then stopped by us. Name the rank they lost, if they
  // agree on one; else report the first failure seen.
  if (outcome.interruptSignal || outcome.failureOrder.empty())
    return result;
  result.cause = outcome.failureOrder.front();
  std::map<int, std::vector<int>> blamedBy = blamedRanks(ranks, store);
  if (blamedBy.size() == 1)
    result.lostReport = describeLostRank(ranks.at(blamedBy.begin()->first),
                                         blamedBy.begin()->second);
  return result;
}

std::string describeLaunchFailure(const std::vector<RankProcess> &ranks,
                                  const SupervisionOutcome &outcome,
                                  const FailureAttribution &attribution) {
  if (attribution.cause >= 0) {
    const RankProcess &cause = ranks[attribution.cause];
    std::string line = attribution.lostReport.empty() ? cause.describeExit()
                                                      : attribution.lostReport;
    // Stopped long enough for the ranks' launcher watch to give up: the
    // pause is the cause, not the rank that noticed it first.
    if (outcome.longestPause >= kLauncherAnswerMin)
      line = "the launcher was stopped for " +
             std::to_string(outcome.longestPause.count() / 1000) +
             " s and its ranks gave up on it (" + line + ")";
    return line;
  }
  if (outcome.interruptSignal) {
    const size_t nproc = ranks.size();
    return "interrupted by " + signalName(outcome.interruptSignal) + "; stopped " +
           std::to_string(nproc) + (nproc == 1 ? " rank" : " ranks");
  }
  return "";
}

int reportLaunchOutcome(const std::vector<RankProcess> &ranks,
                        const SupervisionOutcome &outcome,
                        const FailureAttribution &attribution,
                        const LaunchOptions &options) {
  std::string line = describeLaunchFailure(ranks, outcome, attribution);
  if (!line.empty() && options.reportFailures)
    std::cerr << ("error: " + line + "\n") << std::flush;
  if (attribution.cause >= 0)
    return ranks[attribution.cause].launcherExitCode();
  return outcome.interruptSignal ? 128 + outcome.interruptSignal : 0;
}

} // namespace snn::dist::detail
