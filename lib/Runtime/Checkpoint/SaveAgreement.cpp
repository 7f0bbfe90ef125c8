//===- SaveAgreement.cpp - Every rank learns why a save failed ------------===//

#include "snn/Runtime/Checkpoint/SaveAgreement.h"
#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/ops/zeros.h>

#include <algorithm>

namespace snn::runtime {

void agreeAcrossRanks(const dist::Group &group, const std::string &error) {
  // Each member's message in a fixed-size slot of one all_gather.
  constexpr int64_t kSlot = 512;
  at::Tensor mine = at::zeros({kSlot}, at::kByte);
  std::copy_n(error.data(), std::min<size_t>(error.size(), kSlot - 12),
              reinterpret_cast<char *>(mine.data_ptr<uint8_t>()));
  at::Tensor all = dist::allGather(group, mine);
  const char *slots = reinterpret_cast<const char *>(all.data_ptr<uint8_t>());
  for (int member = 0; member < group.size(); ++member) {
    std::string cause(slots + member * kSlot);
    if (cause.empty())
      continue;
    if (group.size() > 1)
      cause = "rank " + std::to_string(group.globalRank(member)) + ": " + cause;
    throw Error(cause);
  }
}

} // namespace snn::runtime
