// Small models for the planner tests, built op by op like the compiler's bridge does.
#ifndef SNN_TEST_PLANNER_TESTMODELS_H
#define SNN_TEST_PLANNER_TESTMODELS_H

#include "snn/Planner/ModelInfo.h"

#include <string>
#include <vector>

namespace snn::planner::test {

/// Appends ops with inferred output shapes; the batch dimension is -1 throughout.
class ModelBuilder {
public:
  ModelBuilder(std::vector<int64_t> inputShape, int64_t timeSteps);

  int linear(int input, int64_t out, bool bias, const std::string &name, bool candidate = true);
  int conv(int input, int64_t out, int64_t kernel, int64_t padding, const std::string &name,
           bool candidate = false);
  int batchNorm(int input, const std::string &name);
  int neuron(int input, OpKind kind, const std::string &name);
  int maxPool(int input, int64_t kernel, const std::string &name);
  int avgPool(int input, int64_t kernel, const std::string &name);
  /// A per-step view of `input` as `shape` (the batch dimension, 1, as -1).
  int reshape(int input, std::vector<int64_t> shape, const std::string &name);
  int flatten(int input, const std::string &name);
  int meanTime(int input, const std::string &name);
  /// An elementwise add of two values of the same shape (a residual connection).
  int residualAdd(int left, int right, const std::string &name);
  /// spiking_attention of `heads` over a [T, N, 3C, H, W] qkv input: [T, N, C, H, W].
  int spikingAttention(int input, int64_t heads, const std::string &name);

  ModelInfo build(int output);

private:
  const std::vector<int64_t> &shapeOf(int op) const;
  int add(OpInfo op);
  ModelInfo model_;
};

/// Flatten - Linear(in, hidden) - LIF - Linear(hidden, classes) - LIF, like
/// snnexport.models.spiking_mlp (names "0".."4").
ModelInfo spikingMlp(int64_t in, int64_t hidden, int64_t classes, int64_t timeSteps = 4);

/// snnexport.models.csnn at `channels` (28x28 input): conv_fc.0 .. conv_fc.12 + mean.
ModelInfo csnn(int64_t channels, int64_t timeSteps = 4, bool convCandidates = false);

} // namespace snn::planner::test

#endif
