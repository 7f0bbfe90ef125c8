//===- Topology.h - The named mesh dimensions of a request --------*- C++ -*-===//
#ifndef SNN_PLANNER_TOPOLOGY_H
#define SNN_PLANNER_TOPOLOGY_H

#include "snn/Planner/Result.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace snn::planner {

/// Named mesh dimensions, ordered dp, tp, pp, vpp, then the others as given. `vpp` is the
/// number of virtual pipeline stages per rank, not a device dimension: it is not part of
/// the world size.
struct Topology {
  std::vector<std::pair<std::string, int64_t>> dims;

  int64_t worldSize() const;
  int64_t size(const std::string &name) const; ///< 0 when absent
  bool has(const std::string &name) const { return size(name) > 0; }
  std::string str() const;
};
/// "dp=2,tp=2,pp=1": comma-separated name=size, sizes positive integers, no repeats.
/// An empty string is the single-process topology.
Result<Topology> parseTopology(const std::string &text);

} // namespace snn::planner

#endif // SNN_PLANNER_TOPOLOGY_H
