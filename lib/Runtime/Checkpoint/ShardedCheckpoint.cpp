//===- ShardedCheckpoint.cpp - Checkpoints of ZeRO and fsdp runs ----------===//

#include "snn/Runtime/Checkpoint/ShardedCheckpoint.h"
#include "snn/Runtime/Checkpoint/SaveAgreement.h"
#include "snn/Runtime/Support/DurableFile.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

namespace snn::runtime {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string rankDirName(int rank) { return "rank" + std::to_string(rank); }

[[noreturn]] void badShards(const std::string &where, const std::string &what) {
  throw Error("sharded checkpoint '" + where + "': " + what);
}

/// One tensor put together from pieces that must cover it exactly once.
class PieceAssembler {
public:
  PieceAssembler(std::vector<int64_t> shape, at::ScalarType dtype)
      : fullShape(std::move(shape)), flat(at::zeros({numelOf(fullShape)},
                                                   at::TensorOptions(dtype))) {}

  void add(int64_t offset, const at::Tensor &piece, const std::string &where,
           const std::string &name) {
    int64_t length = piece.numel();
    if (offset < 0 || offset + length > flat.numel())
      badShards(where, "a piece of '" + name + "' lies outside its " +
                           std::to_string(flat.numel()) + " elements");
    flat.narrow(0, offset, length).copy_(piece.reshape({-1}));
    ranges.emplace_back(offset, length);
  }

  at::Tensor finish(const std::string &where, const std::string &name) {
    std::sort(ranges.begin(), ranges.end());
    int64_t next = 0;
    for (const auto &[offset, length] : ranges) {
      if (offset != next)
        badShards(where, "the pieces of '" + name + "' " +
                             (offset < next ? "overlap" : "leave a gap") +
                             " at element " + std::to_string(std::min(offset, next)));
      next = offset + length;
    }
    if (next != flat.numel())
      badShards(where, "the pieces of '" + name + "' end at element " +
                           std::to_string(next) + " of " +
                           std::to_string(flat.numel()));
    return flat.view(fullShape);
  }

  const std::vector<int64_t> &shape() const { return fullShape; }

private:
  static int64_t numelOf(const std::vector<int64_t> &shape) {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  std::vector<int64_t> fullShape;
  at::Tensor flat;
  std::vector<std::pair<int64_t, int64_t>> ranges;
};

void checkSamePosition(const CheckpointState &first,
                       const CheckpointState &other, int rank,
                       const std::string &where) {
  if (other.step != first.step || other.epoch != first.epoch ||
      other.batch != first.batch || other.optimizer != first.optimizer)
    badShards(where, "rank " + std::to_string(rank) +
                         " is at another step or uses another optimizer "
                         "than rank 0");
  if (other.shard.rank != rank ||
      other.shard.worldSize != first.shard.worldSize)
    badShards(where, rankDirName(rank) + " was written by rank " +
                         std::to_string(other.shard.rank) + " of " +
                         std::to_string(other.shard.worldSize));
}

std::string runIdText(uint64_t runId) {
  return runId == 0 ? "no run id" : "run id " + formatRunId(runId);
}

/// `reference`: what the others agree on ("rank 0 has run id ...").
[[noreturn]] void otherRun(const std::string &where, size_t rank,
                           uint64_t runId, const std::string &reference) {
  badShards(where, "rank " + std::to_string(rank) +
                       "'s shard belongs to another run (it has " +
                       runIdText(runId) + ", " + reference + ")");
}

/// Every rank's shard must come from one run: a rank<R>/ of another run at
/// the same step would otherwise merge into weights half of each. Skipped
/// only when no shard has a run id (checkpoints written before the field).
void checkSameRun(const std::vector<CheckpointState> &ranks,
                  const std::string &where) {
  size_t odd = 0;
  for (size_t rank = 1; rank < ranks.size() && odd == 0; ++rank)
    if (ranks[rank].runId != ranks.front().runId)
      odd = rank;
  if (odd == 0)
    return;
  // With three or more ranks, rank 0 is the odd one when all others agree.
  bool othersAgree =
      ranks.size() > 2 &&
      std::all_of(ranks.begin() + 2, ranks.end(), [&](const CheckpointState &s) {
        return s.runId == ranks[1].runId;
      });
  size_t named = othersAgree ? 0 : odd, reference = othersAgree ? 1 : 0;
  otherRun(where, named, ranks[named].runId,
           "rank " + std::to_string(reference) + " has " +
               runIdText(ranks[reference].runId));
}

/// shards.json's run id (written by rank 0 with the index), when it has one.
void checkIndexRun(const json &meta, const std::vector<CheckpointState> &ranks,
                   const std::string &dir) {
  if (!meta.contains("run_id"))
    return;
  const json &field = meta.at("run_id");
  std::string expected = field.is_string() ? field.get<std::string>() : field.dump();
  for (size_t rank = 0; rank < ranks.size(); ++rank)
    if (ranks[rank].runId == 0 || formatRunId(ranks[rank].runId) != expected)
      otherRun(dir, rank, ranks[rank].runId,
               std::string(kShardIndexFile) + " has run id " + expected);
}

std::vector<CheckpointTensor>
mergeModel(const std::vector<CheckpointState> &ranks,
           std::map<std::string, std::vector<int64_t>> &shapes,
           const std::string &where) {
  std::vector<std::string> order;
  std::map<std::string, PieceAssembler> pieces;
  std::map<std::string, std::string> kinds;
  for (const CheckpointState &rank : ranks)
    for (const CheckpointTensor &entry : rank.model) {
      if (!entry.isPiece())
        continue;
      auto [it, added] = pieces.try_emplace(entry.name, entry.fullShape,
                                            entry.value.scalar_type());
      if (added) {
        order.push_back(entry.name);
        kinds[entry.name] = entry.kind;
      } else if (it->second.shape() != entry.fullShape) {
        badShards(where, "ranks disagree on the shape of '" + entry.name + "'");
      }
      it->second.add(entry.offset, entry.value, where, entry.name);
    }
  std::vector<CheckpointTensor> model;
  for (const std::string &name : order) {
    PieceAssembler &assembler = pieces.at(name);
    shapes[name] = assembler.shape();
    model.push_back({name, kinds[name], assembler.finish(where, name)});
  }
  // Whole entries (buffers, replicated on every rank): rank 0's.
  for (const CheckpointTensor &entry : ranks.front().model)
    if (!entry.isPiece())
      model.push_back(entry);
  return model;
}

/// The state pieces of one parameter, as one whole entry.
CheckpointOptimizerEntry
mergeParamState(const std::string &param,
                const std::vector<const CheckpointOptimizerEntry *> &parts,
                const std::vector<int64_t> &shape, const std::string &where) {
  CheckpointOptimizerEntry merged{param, parts.front()->step, {}};
  std::set<std::string> names;
  for (const auto &[name, tensor] : parts.front()->tensors)
    names.insert(name);
  for (const CheckpointOptimizerEntry *part : parts) {
    std::set<std::string> partNames;
    for (const auto &[name, tensor] : part->tensors)
      partNames.insert(name);
    if (part->step != merged.step || partNames != names)
      badShards(where, "the optimizer state pieces of '" + param +
                           "' disagree (step or state tensors)");
  }
  for (const std::string &name : names) {
    PieceAssembler assembler(shape, at::kFloat);
    for (const CheckpointOptimizerEntry *part : parts)
      for (const auto &[partName, tensor] : part->tensors)
        if (partName == name)
          assembler.add(part->offset, tensor, where, param + "/" + name);
    merged.tensors.emplace_back(name, assembler.finish(where, param + "/" + name));
  }
  return merged;
}

std::vector<CheckpointOptimizerEntry>
mergeOptimizer(const std::vector<CheckpointState> &ranks,
               const std::map<std::string, std::vector<int64_t>> &shapes,
               const std::string &where) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const CheckpointOptimizerEntry *>> parts;
  for (const CheckpointState &rank : ranks)
    for (const CheckpointOptimizerEntry &entry : rank.optimizerState) {
      if (entry.offset < 0)
        badShards(where, "optimizer state of '" + entry.param +
                             "' is whole in a sharded checkpoint");
      auto &list = parts[entry.param];
      if (list.empty())
        order.push_back(entry.param);
      list.push_back(&entry);
    }
  std::vector<CheckpointOptimizerEntry> merged;
  for (const std::string &param : order) {
    auto shape = shapes.find(param);
    if (shape == shapes.end())
      badShards(where, "optimizer state for '" + param +
                           "', which is not a parameter in it");
    merged.push_back(mergeParamState(param, parts[param], shape->second, where));
  }
  return merged;
}

template <typename F> std::string attempt(F &&body) {
  try {
    body();
    return {};
  } catch (const std::exception &e) {
    return e.what();
  }
}

/// The index's rank entries: the names rank0, rank1, ... in order, one per rank of
/// `world_size`. They are names inside the checkpoint, never paths, so an edited
/// index cannot point the reader at another run's shards or anywhere else.
std::vector<std::string> rankDirectories(const json &meta, const std::string &dir) {
  std::vector<std::string> names;
  try {
    int64_t worldSize = meta.at("world_size").get<int64_t>();
    const json &ranks = meta.at("ranks");
    if (worldSize < 1 || int64_t(ranks.size()) != worldSize)
      badShards(dir, std::string(kShardIndexFile) + " lists " + std::to_string(ranks.size()) +
                         " ranks for world_size " + std::to_string(worldSize));
    for (size_t rank = 0; rank < ranks.size(); ++rank) {
      std::string name = ranks[rank].get<std::string>();
      if (name != rankDirName(int(rank)))
        badShards(dir, std::string(kShardIndexFile) + " names rank " + std::to_string(rank) +
                           " '" + name + "', expected '" + rankDirName(int(rank)) +
                           "' (a name inside the checkpoint)");
      names.push_back(name);
    }
  } catch (const json::exception &e) {
    badShards(dir, std::string(kShardIndexFile) + " lacks its rank list (" + e.what() + ")");
  }
  return names;
}

} // namespace

CheckpointState mergeShards(const std::vector<CheckpointState> &ranks,
                            const std::string &where) {
  if (ranks.empty())
    badShards(where, "it has no ranks");
  checkSameRun(ranks, where);
  for (size_t rank = 0; rank < ranks.size(); ++rank)
    checkSamePosition(ranks.front(), ranks[rank], int(rank), where);
  if (ranks.front().shard.worldSize != int(ranks.size()))
    badShards(where, "rank 0 was written by a run of " +
                         std::to_string(ranks.front().shard.worldSize) +
                         " ranks, the index lists " +
                         std::to_string(ranks.size()));
  CheckpointState merged = ranks.front();
  std::map<std::string, std::vector<int64_t>> shapes;
  merged.model = mergeModel(ranks, shapes, where);
  merged.optimizerState = mergeOptimizer(ranks, shapes, where);
  merged.shard = CheckpointShard();
  return merged;
}

CheckpointState readAnyCheckpoint(const std::string &dir) {
  fs::path index = fs::path(dir) / kShardIndexFile;
  std::error_code ec;
  if (!fs::exists(index, ec))
    return readCheckpoint(dir);
  json meta;
  try {
    meta = json::parse(readWholeFile(fileInside(dir, kShardIndexFile)));
    if (meta.at("format").get<std::string>() != kShardIndexFormat)
      badShards(dir, std::string(kShardIndexFile) + " is not a shard index");
  } catch (const json::exception &e) {
    badShards(dir, std::string(kShardIndexFile) + " is malformed (" +
                       e.what() + ")");
  }
  std::vector<CheckpointState> ranks;
  for (const std::string &name : rankDirectories(meta, dir))
    ranks.push_back(readCheckpoint(fileInside(dir, name)));
  checkIndexRun(meta, ranks, dir);
  return mergeShards(ranks, dir);
}

void beginShardedSave(CheckpointDirectory &dir, int64_t step, const dist::Group &group) {
  std::string error;
  if (group.rank() == 0)
    error = attempt([&] { dir.beginSave(step); });
  agreeAcrossRanks(group, error);
}

void writeShard(const CheckpointDirectory &dir, const CheckpointState &state) {
  fs::path own = fs::path(dir.tempPath(state.step)) / rankDirName(state.shard.rank);
  std::error_code ec;
  if (!fs::create_directory(own, ec) && ec)
    throw Error("cannot create '" + own.string() + "': " + ec.message());
  writeCheckpoint(own.string(), state);
  syncDirectory(own.string());
}

namespace {

/// shards.json of a checkpoint of `index.worldSize` ranks, synced.
void writeShardIndex(const std::string &temp, const ShardIndex &index) {
  json ranks = json::array();
  for (int member = 0; member < index.worldSize; ++member)
    ranks.push_back(rankDirName(member));
  json meta = {{"format", kShardIndexFormat}, {"version", 1},
               {"step", index.step},          {"world_size", index.worldSize},
               {"mode", index.mode},          {"ranks", ranks}};
  if (index.runId != 0)
    meta["run_id"] = formatRunId(index.runId);
  writeFileSynced((fs::path(temp) / kShardIndexFile).string(), meta.dump(1) + "\n");
}

} // namespace

std::string publishShardedSave(CheckpointDirectory &dir, const ShardIndex &index,
                               const dist::Group &group, const std::string &writeError) {
  std::string path;
  try {
    agreeAcrossRanks(group, writeError);
    std::string error;
    if (group.rank() == 0)
      error = attempt([&] {
        writeShardIndex(dir.tempPath(index.step), index);
        path = dir.commitSave(index.step);
      });
    agreeAcrossRanks(group, error);
  } catch (...) {
    if (group.rank() == 0)
      dir.abortSave(index.step);
    throw;
  }
  return path.empty()
             ? (fs::path(dir.path()) / CheckpointDirectory::nameForStep(index.step)).string()
             : path;
}

std::string saveShardedCheckpoint(CheckpointDirectory &dir,
                                  const CheckpointState &state,
                                  const dist::Group &group) {
  const std::string what = "checkpoint " + CheckpointDirectory::nameForStep(state.step);
  try {
    beginShardedSave(dir, state.step, group);
    std::string error = attempt([&] { writeShard(dir, state); });
    return publishShardedSave(dir, shardIndexOf(state, group), group, error);
  } catch (const Error &e) {
    throw Error(what + ": " + e.what());
  }
}

ShardIndex shardIndexOf(const CheckpointState &state, const dist::Group &group) {
  return {state.step, state.runId, state.shard.mode, group.size()};
}

} // namespace snn::runtime
