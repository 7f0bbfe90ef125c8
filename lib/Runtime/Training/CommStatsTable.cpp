//===- CommStatsTable.cpp - snn-run train --comm-stats --------------------===//

#include "snn/Runtime/Training/CommStatsTable.h"

#include <cinttypes>

namespace snn::runtime {

void CommStatsTable::step(int64_t step, const std::vector<CommCount> &counts) {
  if (!headerWritten) {
    std::fprintf(out, "%-6s %-10s %-10s %8s %14s %10s\n", "step", "kind",
                 "mesh_axis", "calls", "bytes", "ms");
    headerWritten = true;
  }
  for (const CommCount &count : counts)
    std::fprintf(out,
                 "%-6" PRId64 " %-10s %-10s %8" PRId64 " %14" PRId64 " %10.3f\n",
                 step, count.kind.c_str(), count.meshAxis.c_str(), count.calls,
                 count.bytes, 1e3 * count.seconds);
  std::fflush(out);
}

} // namespace snn::runtime
