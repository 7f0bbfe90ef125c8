//===- CommStatsTable.h - snn-run train --comm-stats ------------*- C++ -*-===//
//
// The collectives of a partitioned program's ops in each training step, as a
// table on stdout (docs/tools.md, "--comm-stats"): a header line, then one
// row per step and (kind, mesh axis) that ran at least once, columns
// separated by spaces:
//
//   step   kind       mesh_axis     calls          bytes
//   0      all_gather tp                2           5120
//   0      all_reduce tp                2           5632
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_TRAINING_COMMSTATSTABLE_H
#define SNN_RUNTIME_TRAINING_COMMSTATSTABLE_H

#include "snn/Runtime/Execution/MeshContext.h"

#include <cstdio>
#include <vector>

namespace snn::runtime {

class CommStatsTable {
public:
  explicit CommStatsTable(std::FILE *out = stdout) : out(out) {}

  /// The rows of optimizer step `step` (the header first, once).
  void step(int64_t step, const std::vector<CommCount> &counts);

private:
  std::FILE *out;
  bool headerWritten = false;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_TRAINING_COMMSTATSTABLE_H
