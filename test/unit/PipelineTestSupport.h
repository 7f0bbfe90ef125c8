//===- PipelineTestSupport.h - Pipeline artifacts for tests -----*- C++ -*-===//
//
// A small spiking network written as one program (plan mode none) or cut
// into K logical stage programs with recv/send nodes (plan mode pp), from the
// same weights, so a pipeline run can be compared with one process:
//
//   unit 0: fc0 linear 6->8 (+bias) -> lif0          sends s0 and fc0's output
//   unit 1: fc1 linear 8->8 (no bias) + fc0's output -> lif1 -> dropout 0.25
//   unit 2: fc2 linear 8->8 (+bias) -> bn2 -> plif2 (w)
//   unit 3: fc3 linear 8->3 (+bias) -> lif3 -> mean_time -> output [N, 3]
//
// K = 1, 2 (units 0-1 | 2-3) or 4 (one unit each). Between units 0 and 1 two
// tensors cross (two slots).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_TEST_UNIT_PIPELINETESTSUPPORT_H
#define SNN_TEST_UNIT_PIPELINETESTSUPPORT_H

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace snn::test {

constexpr int64_t kPipeSteps = 4;    // T
constexpr int64_t kPipeFeatures = 6; // input features
constexpr int64_t kPipeClasses = 3;

struct PipelineSpec {
  int64_t stages = 2; ///< K: 1, 2 or 4
  int64_t ranks = 1;  ///< S, the pp axis
  int64_t dp = 1;     ///< D > 1: mesh [dp, pp]
  std::string schedule = "gpipe";
  int64_t microbatches = 2;
  bool delayWgrad = false;
  /// pp_memopt_stages: the logical stages that recompute their forward.
  std::vector<int64_t> recompute;
  /// Initial weights (the same for every spec with the same seed).
  uint64_t seed = 1;
};

/// Writes the K stage programs and the pp manifest.
void writePipelineArtifact(const std::string &dir, const PipelineSpec &spec);

/// Writes the same network, same weights, as one program (plan mode none).
void writeUnsplitPipelineModel(const std::string &dir, uint64_t seed = 1);

/// The neuron layers' names, for firing-rate checks ("lif0", ...).
std::vector<std::string> pipelineNeuronLayers();

/// Expects every neuron layer of the network (seed `seed`'s weights) to fire
/// at 5-50% on `x` [T, N, 6] in training mode, so that gradients flow.
void expectModeratePipelineRates(const at::Tensor &x, uint64_t seed = 1);

} // namespace snn::test

#endif // SNN_TEST_UNIT_PIPELINETESTSUPPORT_H
