//===- BatchLoaderTest.cpp - Batch layout, order and assembly -------------===//

#include "snn/Runtime/Data/BatchLoader.h"
#include "snn/Runtime/Data/BatchLayout.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Data/SampleOrder.h"

#include <ATen/ops/arange.h>
#include <gtest/gtest.h>

using namespace snn::runtime;

namespace {

/// S samples of `sampleShape`; sample i holds i * 100 + 0, 1, 2, ...; label i.
Dataset makeDataset(int64_t count, std::vector<int64_t> sampleShape) {
  std::vector<int64_t> shape{count};
  shape.insert(shape.end(), sampleShape.begin(), sampleShape.end());
  int64_t perSample = 1;
  for (int64_t dim : sampleShape)
    perSample *= dim;
  Dataset data;
  data.name = "data.npy";
  data.samples = at::arange(count, at::kFloat)
                     .reshape({count, 1})
                     .mul(100)
                     .add(at::arange(perSample, at::kFloat))
                     .reshape(shape);
  data.labels = at::arange(count, at::kLong);
  return data;
}

TensorSpec inputSpec(std::vector<int64_t> shape, bool timeMajor = true) {
  return TensorSpec{"input", std::move(shape), timeMajor};
}

std::string layoutError(const Dataset &data, const TensorSpec &spec,
                        int64_t repeatTime) {
  try {
    resolveBatchLayout(data, spec, repeatTime);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(BatchLayout, StaticSamplesTakeTheManifestTOrRepeatTime) {
  Dataset data = makeDataset(4, {1, 2, 2});
  BatchLayout layout = resolveBatchLayout(data, inputSpec({3, -1, 1, 2, 2}), 0);
  EXPECT_EQ(layout.steps, 3);
  EXPECT_FALSE(layout.sequences);
  EXPECT_EQ(resolveBatchLayout(data, inputSpec({3, -1, 1, 2, 2}), 3).steps, 3);
  EXPECT_EQ(resolveBatchLayout(data, inputSpec({-1, -1, 1, 2, 2}), 5).steps, 5);
  EXPECT_NE(layoutError(data, inputSpec({3, -1, 1, 2, 2}), 4)
                .find("--repeat-time 4 does not match the artifact's T = 3"),
            std::string::npos);
  EXPECT_NE(layoutError(data, inputSpec({-1, -1, 1, 2, 2}), 0)
                .find("need --repeat-time T"),
            std::string::npos);
}

TEST(BatchLayout, SequencesCarryTheirTime) {
  Dataset data = makeDataset(4, {3, 5});
  BatchLayout layout = resolveBatchLayout(data, inputSpec({3, -1, 5}), 0);
  EXPECT_EQ(layout.steps, 3);
  EXPECT_TRUE(layout.sequences);
  EXPECT_NE(layoutError(data, inputSpec({3, -1, 5}), 3).find("holds sequences"),
            std::string::npos);
  EXPECT_NE(layoutError(data, inputSpec({4, -1, 5}), 0)
                .find("samples have shape [3, 5], the artifact's input 'input' "
                      "[4, ?, 5] takes [5] (static, repeated over T) or [4, 5] "
                      "(a sequence [T, ...]) per sample"),
            std::string::npos);
}

TEST(BatchLayout, InputWithoutTime) {
  Dataset data = makeDataset(4, {5});
  EXPECT_EQ(resolveBatchLayout(data, inputSpec({-1, 5}, false), 0).steps, 0);
  EXPECT_NE(
      layoutError(data, inputSpec({-1, 5}, false), 2).find("not time-major"),
      std::string::npos);
}

TEST(BatchLoader, StaticBatchesFollowTheOrderAndRepeatOverTime) {
  Dataset data = makeDataset(10, {2});
  BatchLoader loader(data, {3, false}, {4, true, true, 9});
  EXPECT_EQ(loader.batchesPerEpoch(), 2);
  loader.startEpoch(1);
  std::vector<int64_t> order = shuffledOrder(9, 1, 10);
  Batch batch = loader.batch(1);
  ASSERT_EQ(batch.input.sizes(), (std::vector<int64_t>{3, 4, 2}));
  for (int64_t i = 0; i < 4; ++i) {
    int64_t sample = order[size_t(4 + i)];
    EXPECT_EQ(batch.labels[i].item<int64_t>(), sample);
    for (int64_t t = 0; t < 3; ++t) {
      EXPECT_EQ(batch.input[t][i][0].item<float>(), float(sample * 100));
      EXPECT_EQ(batch.input[t][i][1].item<float>(), float(sample * 100 + 1));
    }
  }
}

TEST(BatchLoader, SequencesAreTransposedToTimeMajor) {
  Dataset data = makeDataset(5, {3, 2}); // [S, T=3, 2]
  BatchLoader loader(data, {3, true}, {2, false, true, 0});
  Batch batch = loader.batch(1); // samples 2 and 3
  ASSERT_EQ(batch.input.sizes(), (std::vector<int64_t>{3, 2, 2}));
  EXPECT_TRUE(batch.input.is_contiguous());
  for (int64_t t = 0; t < 3; ++t)
    for (int64_t i = 0; i < 2; ++i)
      EXPECT_TRUE(batch.input[t][i].equal(data.samples[2 + i][t]));
}

TEST(BatchLoader, DropOrKeepTheLastShortBatch) {
  Dataset data = makeDataset(10, {1});
  BatchLoader drop(data, {2, false}, {4, false, true, 0});
  EXPECT_EQ(drop.batchesPerEpoch(), 2);
  EXPECT_THROW(drop.batch(2), Error);
  BatchLoader keep(data, {2, false}, {4, false, false, 0});
  ASSERT_EQ(keep.batchesPerEpoch(), 3);
  Batch last = keep.batch(2);
  EXPECT_EQ(last.size, 2);
  EXPECT_EQ(last.input.sizes(), (std::vector<int64_t>{2, 2, 1}));
  EXPECT_EQ(last.labels[1].item<int64_t>(), 9);
  // A full batch after the short one is still complete.
  EXPECT_EQ(keep.batch(0).size, 4);
}

TEST(BatchLoader, ReusesItsBuffers) {
  Dataset data = makeDataset(8, {2});
  BatchLoader loader(data, {2, false}, {4, false, true, 0});
  void *first = loader.batch(0).input.data_ptr();
  EXPECT_EQ(loader.batch(1).input.data_ptr(), first);
}

TEST(BatchLoader, NoShuffleKeepsFileOrderEveryEpoch) {
  Dataset data = makeDataset(6, {1});
  BatchLoader loader(data, {1, false}, {3, false, true, 4});
  loader.startEpoch(5);
  EXPECT_TRUE(loader.batch(1).labels.equal(at::arange(3, 6, at::kLong)));
}
