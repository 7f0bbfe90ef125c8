//===- Group.cpp - A set of ranks that run collectives together -----------===//

#include "GroupState.h"

namespace snn::dist {

using detail::GroupState;

static GroupState &requireState(const std::shared_ptr<GroupState> &state) {
  if (!state)
    throw DistributedError("use of an invalid group (this rank is not a "
                           "member)");
  return *state;
}

int Group::rank() const { return requireState(state_).rank; }
int Group::size() const { return requireState(state_).size(); }
const std::vector<int> &Group::ranks() const {
  return requireState(state_).ranks;
}
int Group::globalRank(int groupRank) const {
  const GroupState &s = requireState(state_);
  if (groupRank < 0 || groupRank >= s.size())
    throw DistributedError("group " + s.name + " has no rank " +
                           std::to_string(groupRank) + " (size " +
                           std::to_string(s.size()) + ")");
  return s.ranks[groupRank];
}
const std::string &Group::name() const { return requireState(state_).name; }
std::chrono::milliseconds Group::timeout() const {
  return requireState(state_).timeout;
}
Backend Group::backend() const { return requireState(state_).backend; }
GroupState &Group::state() const { return requireState(state_); }

} // namespace snn::dist
