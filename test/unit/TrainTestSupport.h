//===- TrainTestSupport.h - Trainable artifacts for tests -------*- C++ -*-===//
#ifndef SNN_TEST_UNIT_TRAINTESTSUPPORT_H
#define SNN_TEST_UNIT_TRAINTESTSUPPORT_H

#include "snn/Runtime/Data/Dataset.h"

#include <string>

namespace snn::test {

constexpr int64_t kTrainSteps = 4; // T of the test artifacts
constexpr int64_t kTrainFeatures = 6;
constexpr int64_t kTrainClasses = 3;

/// [T, N, 6] -> linear(8) -> batch_norm -> dropout(0.25) -> lif -> linear(3)
/// -> plif -> mean_time -> [N, 3], with parameters and BatchNorm buffers
/// listed in the manifest. `hidden` changes the model (for mismatch tests).
void writeTrainableArtifact(const std::string &dir, int64_t hidden = 8);

/// [T, N, 6] -> linear(3) -> mean_time: no neuron between input and loss.
void writeReadoutArtifact(const std::string &dir);

/// `count` static samples [count, 6] uniform in [0, 1), labels in [0, 3).
runtime::Dataset makeStaticDataset(int64_t count, uint64_t seed);

} // namespace snn::test

#endif // SNN_TEST_UNIT_TRAINTESTSUPPORT_H
