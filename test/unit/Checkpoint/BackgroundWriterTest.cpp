//===- BackgroundWriterTest.cpp - Saves written while training goes on ----===//

#include "TestSupport.h"

#include "snn/Runtime/Checkpoint/BackgroundWriter.h"
#include "snn/Runtime/Checkpoint/CheckpointDirectory.h"
#include "snn/Runtime/Checkpoint/CheckpointLock.h"
#include "snn/Runtime/Checkpoint/NonFiniteValues.h"
#include "snn/Runtime/Execution/RandomState.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/rand.h>
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <future>
#include <limits>
#include <mutex>

#include <sys/resource.h>
#include <unistd.h>

using namespace snn::runtime;
using snn::test::TempDir;
namespace fs = std::filesystem;

namespace {

/// A checkpoint whose tensors.bin holds `floats` values.
CheckpointState stateAt(int64_t step, int64_t floats = 16) {
  CheckpointState state;
  state.step = step;
  state.model = {{"fc.weight", "parameter", at::rand({floats})}};
  state.optimizer = "sgd";
  state.optimizerState = {{"fc.weight", step, {}}};
  state.generatorState = cpuGeneratorState();
  return state;
}

std::string latestName(const CheckpointDirectory &dir) {
  return fs::path(dir.latest()).filename().string();
}

/// Writes beyond `bytes` fail with EFBIG (SIGXFSZ ignored, as snn-run train
/// does) while it lives: a disk that fills up, for the test process only.
class FileSizeLimit {
public:
  explicit FileSizeLimit(rlim_t bytes) {
    previousHandler = std::signal(SIGXFSZ, SIG_IGN);
    ::getrlimit(RLIMIT_FSIZE, &previous);
    rlimit limit = previous;
    limit.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &previous);
    std::signal(SIGXFSZ, previousHandler);
  }

private:
  rlimit previous{};
  void (*previousHandler)(int) = nullptr;
};

} // namespace

TEST(BackgroundWriter, ASecondSaveWaitsForTheOneInFlight) {
  TempDir dir;
  CheckpointDirectory checkpoints(dir.file("ck"), 2);
  BackgroundWriter writer;
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::mutex mutex;
  std::vector<int64_t> order;
  auto saveStep = [&](int64_t step) {
    checkpoints.save(stateAt(step));
    std::lock_guard<std::mutex> lock(mutex);
    order.push_back(step);
  };
  writer.start([&] {
    gate.wait();
    saveStep(1);
  });
  EXPECT_TRUE(writer.pending());
  EXPECT_TRUE(writer.running());
  // The second save point: takes the first save's result, then starts its own.
  std::future<std::string> second = std::async(std::launch::async, [&] {
    std::string previous = writer.wait();
    writer.start([&] { saveStep(2); });
    return previous;
  });
  EXPECT_EQ(second.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  EXPECT_EQ(checkpoints.latest(), "") << "nothing is published while the first save waits";
  release.set_value();
  EXPECT_EQ(second.get(), "");
  EXPECT_EQ(writer.wait(), "");
  EXPECT_FALSE(writer.pending());
  EXPECT_EQ(order, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(latestName(checkpoints), "step-00000002");
  EXPECT_EQ(checkpoints.list().size(), 2u);
}

TEST(BackgroundWriter, AFailedWriteLeavesTheLatestCheckpointAndNoTemporaryDirectory) {
  TempDir dir;
  CheckpointDirectory checkpoints(dir.file("ck"), 2);
  checkpoints.save(stateAt(1));
  BackgroundWriter writer;
  std::string error;
  {
    // tensors.bin of 64 Ki floats cannot be written under a 16 KiB limit.
    FileSizeLimit limit(16 << 10);
    CheckpointState big = stateAt(2, 64 << 10);
    writer.start([&] { checkpoints.save(big); });
    error = writer.wait();
  }
  EXPECT_NE(error.find("step-00000002.tmp/tensors.bin: cannot write: File too large"),
            std::string::npos)
      << error;
  EXPECT_EQ(latestName(checkpoints), "step-00000001");
  EXPECT_FALSE(fs::exists(checkpoints.tempPath(2)));
  EXPECT_EQ(checkpoints.list().size(), 1u);
  EXPECT_EQ(readCheckpoint(checkpoints.latest()).step, 1);
  // The next save succeeds again.
  writer.start([&] { checkpoints.save(stateAt(3)); });
  EXPECT_EQ(writer.wait(), "");
  EXPECT_EQ(latestName(checkpoints), "step-00000003");
}

TEST(BackgroundWriter, WithoutAThreadTheJobRunsInStart) {
  BackgroundWriter writer(false);
  bool ran = false;
  writer.start([&] {
    ran = true;
    throw Error("disk full");
  });
  EXPECT_TRUE(ran);
  EXPECT_TRUE(writer.pending());
  EXPECT_FALSE(writer.running());
  EXPECT_THROW(writer.start([] {}), std::logic_error);
  EXPECT_EQ(writer.wait(), "disk full");
  EXPECT_EQ(writer.wait(), "") << "the result is taken once";
}

TEST(CheckpointLock, ASecondHolderIsRefusedUntilTheFirstLetsGo) {
  TempDir dir;
  std::string ck = dir.file("ck");
  {
    CheckpointLock first(ck);
    ASSERT_TRUE(first.held());
    // flock locks belong to an open file: a second open conflicts as another
    // process's would.
    try {
      CheckpointLock second(ck);
      FAIL() << "a second lock was granted";
    } catch (const Error &e) {
      EXPECT_EQ(std::string(e.what()), "--checkpoint " + ck +
                                           " is in use by another job (pid " +
                                           std::to_string(::getpid()) + ")");
    }
  }
  CheckpointLock again(ck);
  EXPECT_TRUE(again.held());
}

TEST(NonFiniteValues, NamesTheFirstTensorWithANaNOrAnInfinity) {
  CheckpointState state = stateAt(1);
  state.model.push_back({"bn.running_var", "buffer", at::ones({3})});
  state.optimizerState = {{"fc.weight", 1, {{"momentum_buffer", at::ones({16})}}}};
  EXPECT_EQ(firstNonFiniteTensor(state), "");
  state.optimizerState[0].tensors[0].second[5] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(firstNonFiniteTensor(state), "optimizer state 'momentum_buffer' of 'fc.weight'");
  state.model[1].value[2] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(firstNonFiniteTensor(state), "buffer 'bn.running_var'");
  // Finite values whose float sum overflows are finite.
  EXPECT_TRUE(allFinite(at::full({4}, 3e38f)));
}
