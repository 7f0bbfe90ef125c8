//===- TensorParallel.h - Megatron pairing of split layers --------*- C++ -*-===//
//
// Tensor parallelism splits a layer's output features (colwise) and the next layer's input
// features (rowwise), so the pair needs one all-reduce forward (of the rowwise output) and
// one backward (of the colwise input gradient). Between the two only per-feature ops may
// run: neurons (their membrane state is split like their input), dropout, and for conv
// pairs batch_norm and pooling. A colwise layer without a rowwise partner keeps its
// output split until its sharded region ends, where it is all-gathered.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_PLANNER_TENSORPARALLEL_H
#define SNN_PLANNER_TENSORPARALLEL_H

#include "snn/Planner/Communication.h"
#include "snn/Planner/ModelInfo.h"
#include "snn/Planner/Result.h"

#include <string>
#include <vector>

namespace snn::planner {

enum class TPRole {
  Replicated, ///< computed whole on every TP rank
  Colwise,    ///< output features split; weight dim 0 split
  Rowwise,    ///< input features split; weight dim 1 split; output all-reduced
  Sharded,    ///< per-feature op inside a split region; output split like its input
};

const char *tpRoleName(TPRole role);

struct TPPair {
  int colwise;
  int rowwise; ///< -1: unpaired, gathered after `gatherAfter`
  int gatherAfter = -1;
};

struct TPLayout {
  std::vector<TPRole> roles;  ///< one per op
  std::vector<int> splitDims;  ///< per op: the output dimension that is split, or -1
  std::vector<TPPair> pairs;
  std::vector<std::string> notes;

  bool empty() const { return pairs.empty(); }
};

/// Pairs the analysis' TP candidates (OpInfo::tpCandidate) in program order.
TPLayout planTensorParallel(const ModelInfo &model);

/// Checks that every split dimension divides by `tpSize`; the error names the op.
Status checkTensorParallelDivisible(const ModelInfo &model, const TPLayout &layout,
                                    int64_t tpSize);

/// Scale of an op's compute, activations and parameters on one TP rank.
struct TPShare {
  std::vector<double> computeScale;    ///< per op: 1 or 1/t
  std::vector<double> activationScale; ///< per op
  std::vector<double> paramScale;      ///< per op
};
TPShare tensorParallelShare(const ModelInfo &model, const TPLayout &layout, int64_t tpSize);

/// The TP all-reduces, all-gathers and reduce-scatters of one step on `batch` samples.
/// The collectives of one training step's tp pairs (of those whose colwise op is in
/// `onlyOps`, when given: one pipeline stage's).
Communication tensorParallelCommunication(const ModelInfo &model, const TPLayout &layout,
                                          int64_t tpSize, int64_t batch,
                                          const std::vector<int> *onlyOps = nullptr);

} // namespace snn::planner

#endif
