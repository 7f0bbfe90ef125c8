//===- RankAgreement.cpp - The ranks agree before the first collective ----===//

#include "snn/Runtime/Execution/RankAgreement.h"
#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Execution/CommunicationFingerprint.h"
#include "snn/Runtime/Execution/ProgramCoordinate.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/ops/zeros.h>

#include <algorithm>
#include <cstring>

namespace snn::runtime {

namespace {

/// Every rank's `text`, in rank order: the lengths first, so that every
/// rank sends a message of the same size (the longest, zero-padded).
std::vector<std::string> allGatherText(const dist::Group &group, const std::string &text) {
  at::Tensor length = at::zeros({1}, at::kLong);
  length.data_ptr<int64_t>()[0] = int64_t(text.size());
  at::Tensor lengths = dist::allGather(group, length);
  const int64_t *sizes = lengths.data_ptr<int64_t>();
  int64_t longest = *std::max_element(sizes, sizes + group.size());
  at::Tensor mine = at::zeros({std::max<int64_t>(longest, 1)}, at::kByte);
  std::memcpy(mine.data_ptr<uint8_t>(), text.data(), text.size());
  at::Tensor all = dist::allGather(group, mine).contiguous();
  const char *bytes = reinterpret_cast<const char *>(all.data_ptr<uint8_t>());
  std::vector<std::string> texts;
  for (int member = 0; member < group.size(); ++member)
    texts.emplace_back(bytes + size_t(member) * size_t(mine.numel()), size_t(sizes[member]));
  return texts;
}

} // namespace

void checkRanksAgree(const Artifact &artifact, const dist::World &world) {
  if (world.size() < 2 || !hasPerRankPrograms(artifact.run))
    return;
  CommunicationFingerprint mine = fingerprintOf(artifact, world.rank());
  std::vector<CommunicationFingerprint> ranks;
  for (const std::string &text : allGatherText(world.group(), serializeFingerprint(mine)))
    ranks.push_back(parseFingerprint(text));
  std::string disagreement = findDisagreement(ranks, artifact.manifest.mesh);
  if (!disagreement.empty())
    throw Error("the ranks' programs do not agree, refused before the first collective: " +
                disagreement);
}

} // namespace snn::runtime
