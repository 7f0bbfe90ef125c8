//===- ShardedCheckpointTest.cpp - Merging the shards of a checkpoint -----===//

#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Sharding/FlatShardLayout.h"
#include "snn/Runtime/Sharding/ShardPieceState.h"
#include "snn/Runtime/Checkpoint/ShardedCheckpoint.h"
#include "snn/Runtime/Execution/RandomState.h"
#include "TestSupport.h"

#include <ATen/ops/arange.h>
#include <ATen/ops/equal.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace snn::runtime;

namespace {

/// What rank `rank` of `ranks` would save for one parameter "w" (values
/// 0..numel-1, shape {numel}) with SGD momentum state 100 + value.
CheckpointState rankState(int rank, int ranks, int64_t numel) {
  FlatShardLayout layout({numel}, ranks);
  at::Tensor values = at::arange(numel, at::kFloat);
  CheckpointState state;
  state.step = 7;
  state.optimizer = "sgd";
  state.shard = {rank, ranks, "fsdp"};
  for (const ShardPiece &piece : layout.piecesOf(rank)) {
    at::Tensor part = values.narrow(0, piece.offset, piece.length);
    state.model.push_back(parameterPiece("w", part, piece, {numel}));
    ParamState param;
    param.step = 3;
    param.momentumBuffer = part.add(100);
    state.optimizerState.push_back(statePiece("w", param, piece));
  }
  state.model.push_back({"bn.running_mean", "buffer", at::arange(2, at::kFloat)});
  return state;
}

TEST(ShardedCheckpoint, MergeRebuildsWholeTensors) {
  std::vector<CheckpointState> ranks;
  for (int rank = 0; rank < 3; ++rank)
    ranks.push_back(rankState(rank, 3, 10));
  CheckpointState merged = mergeShards(ranks, "ck");
  ASSERT_EQ(merged.model.size(), 2u);
  EXPECT_FALSE(merged.model[0].isPiece());
  EXPECT_TRUE(at::equal(merged.model[0].value, at::arange(10, at::kFloat)));
  EXPECT_EQ(merged.model[1].name, "bn.running_mean");
  ASSERT_EQ(merged.optimizerState.size(), 1u);
  EXPECT_EQ(merged.optimizerState[0].offset, -1);
  EXPECT_EQ(merged.optimizerState[0].step, 3);
  EXPECT_TRUE(at::equal(merged.optimizerState[0].tensors[0].second,
                        at::arange(10, at::kFloat).add(100)));
  EXPECT_EQ(merged.shard.worldSize, 0);
  EXPECT_EQ(merged.step, 7);
}

TEST(ShardedCheckpoint, MergeRefusesMissingOrInconsistentShards) {
  std::vector<CheckpointState> ranks{rankState(0, 3, 10), rankState(1, 3, 10)};
  // The index lists 2 ranks, the files say 3: a rank's pieces are missing.
  EXPECT_THROW(mergeShards(ranks, "ck"), Error);
  ranks.push_back(rankState(2, 3, 10));
  ranks[1].step = 8;
  EXPECT_THROW(mergeShards(ranks, "ck"), Error);
  ranks[1].step = 7;
  ranks[2].model[0].offset = 7; // overlaps rank 1's piece
  EXPECT_THROW(mergeShards(ranks, "ck"), Error);
}

/// A sharded checkpoint of 2 ranks in `dir` whose index lists `ranks` for `worldSize`;
/// returns readAnyCheckpoint's error, or "" when it loads.
std::string loadWithIndex(const std::string &dir, const std::string &ranks, int worldSize) {
  for (int rank = 0; rank < 2; ++rank) {
    std::string own = dir + "/rank" + std::to_string(rank);
    std::filesystem::create_directories(own);
    CheckpointState state = rankState(rank, 2, 10);
    state.generatorState = cpuGeneratorState();
    writeCheckpoint(own, state);
  }
  std::ofstream(dir + "/" + kShardIndexFile)
      << R"({"format": "spikemesh-sharded-checkpoint", "version": 1, "step": 7, "mode": "fsdp", )"
      << "\"world_size\": " << worldSize << ", \"ranks\": " << ranks << "}";
  try {
    readAnyCheckpoint(dir);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

TEST(ShardedCheckpoint, IndexEntriesAreRankNamesNotPaths) {
  snn::test::TempDir dir;
  EXPECT_EQ(loadWithIndex(dir.path(), R"(["rank0", "rank1"])", 2), "");
  EXPECT_NE(loadWithIndex(dir.path(), R"(["rank0", "/etc"])", 2)
                .find("names rank 1 '/etc', expected 'rank1' (a name inside the checkpoint)"),
            std::string::npos);
  EXPECT_NE(loadWithIndex(dir.path(), R"(["rank0", "../other/rank1"])", 2).find("names rank 1"),
            std::string::npos);
  EXPECT_NE(loadWithIndex(dir.path(), R"(["rank1", "rank0"])", 2).find("names rank 0 'rank1'"),
            std::string::npos);
  EXPECT_NE(loadWithIndex(dir.path(), R"(["rank0", "rank1"])", 3)
                .find("lists 2 ranks for world_size 3"),
            std::string::npos);
}

/// Shards of 2 ranks written to `dir`, rank R's carrying `runIds[R]` (0: no
/// field, as before run ids), and an index with `indexRunId` ("": none);
/// returns readAnyCheckpoint's error, or "" when it loads.
std::string loadWithRunIds(const std::string &dir, std::vector<uint64_t> runIds,
                           const std::string &indexRunId = "") {
  for (int rank = 0; rank < 2; ++rank) {
    std::string own = dir + "/rank" + std::to_string(rank);
    std::filesystem::create_directories(own);
    CheckpointState state = rankState(rank, 2, 10);
    state.generatorState = cpuGeneratorState();
    state.runId = runIds[size_t(rank)];
    writeCheckpoint(own, state);
  }
  std::ofstream(dir + "/" + kShardIndexFile)
      << R"({"format": "spikemesh-sharded-checkpoint", "version": 1, "step": 7, "mode": "fsdp", )"
      << R"("world_size": 2, "ranks": ["rank0", "rank1"])"
      << (indexRunId.empty() ? "" : ", \"run_id\": \"" + indexRunId + "\"") << "}";
  try {
    CheckpointState merged = readAnyCheckpoint(dir);
    EXPECT_EQ(merged.runId, runIds[0]);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

TEST(ShardedCheckpoint, RefusesShardsOfAnotherRunNamingTheRank) {
  snn::test::TempDir dir;
  const uint64_t a = 0x1111222233334444ull, b = 0xaaaabbbbccccddddull;
  // One run's shards, with or without the index's copy of the id.
  EXPECT_EQ(loadWithRunIds(dir.path(), {a, a}), "");
  EXPECT_EQ(loadWithRunIds(dir.path(), {a, a}, "1111222233334444"), "");
  // Checkpoints written before run ids: no shard has one, nothing to check.
  EXPECT_EQ(loadWithRunIds(dir.path(), {0, 0}), "");
  // rank1/ swapped for the same step of another run.
  std::string error = loadWithRunIds(dir.path(), {a, b});
  EXPECT_NE(error.find("'" + dir.path() + "': rank 1's shard belongs to another run (it has "
                       "run id aaaabbbbccccdddd, rank 0 has run id 1111222233334444)"),
            std::string::npos)
      << error;
  // One shard without the field among shards with it is refused too.
  EXPECT_NE(loadWithRunIds(dir.path(), {a, 0}).find("rank 1's shard belongs to another run "
                                                    "(it has no run id, rank 0 has run id"),
            std::string::npos);
  // The index (rank 0's) tells which rank is the stranger: here rank 0.
  error = loadWithRunIds(dir.path(), {b, a}, "1111222233334444");
  EXPECT_NE(error.find("rank 0's shard belongs to another run (it has run id aaaabbbbccccdddd, "
                       "shards.json has run id 1111222233334444)"),
            std::string::npos)
      << error;
}

TEST(ShardedCheckpoint, MergeNamesTheRankOfAnotherRun) {
  std::vector<CheckpointState> ranks;
  for (int rank = 0; rank < 3; ++rank) {
    ranks.push_back(rankState(rank, 3, 10));
    ranks.back().runId = 5;
  }
  EXPECT_EQ(mergeShards(ranks, "ck").runId, 5u);
  ranks[2].runId = 6;
  try {
    mergeShards(ranks, "ck/step-00000007");
    ADD_FAILURE() << "shards of two runs merged";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("rank 2's shard belongs to another run"),
              std::string::npos)
        << e.what();
  }
  // Rank 0 is the stranger when the other ranks agree.
  ranks[2].runId = 5;
  ranks[0].runId = 6;
  try {
    mergeShards(ranks, "ck/step-00000007");
    ADD_FAILURE() << "shards of two runs merged";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("rank 0's shard belongs to another run (it has run id "
                                         "0000000000000006, rank 1 has run id 0000000000000005)"),
              std::string::npos)
        << e.what();
  }
}

} // namespace
