//===- Checkpoint.cpp - One checkpoint directory on disk ------------------===//

#include "snn/Runtime/Checkpoint/Checkpoint.h"
#include "snn/Runtime/Support/DurableFile.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/ops/empty.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

namespace snn::runtime {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr const char *kMetaFile = "checkpoint.json";
constexpr const char *kDataFile = "tensors.bin";

[[noreturn]] void corrupt(const std::string &dir, const std::string &what) {
  throw Error("checkpoint '" + dir + "' is corrupt: " + what);
}

const std::pair<at::ScalarType, const char *> kDtypes[] = {
    {at::kFloat, "float32"}, {at::kDouble, "float64"}, {at::kLong, "int64"},
    {at::kInt, "int32"},     {at::kByte, "uint8"},
};

const char *dtypeName(at::ScalarType type) {
  for (const auto &[scalar, name] : kDtypes)
    if (scalar == type)
      return name;
  throw Error(std::string("cannot checkpoint a tensor of dtype ") +
              c10::toString(type));
}

at::ScalarType dtypeOf(const std::string &name, const std::string &dir) {
  for (const auto &[scalar, known] : kDtypes)
    if (name == known)
      return scalar;
  corrupt(dir, "unknown tensor dtype '" + name + "'");
}

/// The CRC-32 that guards both files: the metadata (without the checksum
/// field, compact) followed by the tensor bytes, continued piece by piece.
uLong crcOf(uLong crc, const void *bytes, size_t size) {
  return crc32_z(crc, reinterpret_cast<const Bytef *>(bytes), size);
}

std::string formatChecksum(uLong crc) {
  char text[16];
  std::snprintf(text, sizeof(text), "%08lx", crc);
  return std::string("crc32:") + text;
}

std::string checksumOf(const json &body, const std::string &data) {
  std::string meta = body.dump();
  uLong crc = crcOf(crc32(0L, Z_NULL, 0), meta.data(), meta.size());
  return formatChecksum(crcOf(crc, data.data(), data.size()));
}

/// Lays tensors out one after another and records where each one lies; the
/// bytes are written from the tensors themselves, not copied first.
class TensorPacker {
public:
  void add(const std::string &key, const at::Tensor &tensor) {
    at::Tensor dense = tensor.detach().contiguous();
    size_t bytes = dense.nbytes();
    records.push_back({{"key", key},
                       {"dtype", dtypeName(dense.scalar_type())},
                       {"shape", dense.sizes().vec()},
                       {"offset", size},
                       {"bytes", bytes}});
    size += bytes;
    tensors.push_back(std::move(dense));
  }
  /// Writes the bytes to `sink` in order, continuing `crc` over them.
  uLong write(const ByteSink &sink, uLong crc) const {
    for (const at::Tensor &tensor : tensors) {
      const char *bytes = static_cast<const char *>(tensor.data_ptr());
      sink(bytes, tensor.nbytes());
      crc = crcOf(crc, bytes, tensor.nbytes());
    }
    return crc;
  }
  json records = json::array();
  size_t size = 0;

private:
  std::vector<at::Tensor> tensors;
};

/// Looks tensors up by key in a verified checkpoint.
class TensorUnpacker {
public:
  TensorUnpacker(const json &records, const std::string &data,
                 const std::string &dir)
      : data(data), dir(dir) {
    for (const json &record : records)
      byKey.emplace(record.at("key").get<std::string>(), &record);
  }
  at::Tensor get(const std::string &key) const {
    auto it = byKey.find(key);
    if (it == byKey.end())
      corrupt(dir, "tensor '" + key + "' is missing");
    const json &record = *it->second;
    at::Tensor tensor =
        at::empty(record.at("shape").get<std::vector<int64_t>>(),
                  dtypeOf(record.at("dtype").get<std::string>(), dir));
    size_t offset = record.at("offset").get<size_t>();
    size_t bytes = record.at("bytes").get<size_t>();
    if (bytes != tensor.nbytes() || offset > data.size() ||
        bytes > data.size() - offset)
      corrupt(dir, "tensor '" + key + "' lies outside " + kDataFile);
    std::memcpy(tensor.data_ptr(), data.data() + offset, bytes);
    return tensor;
  }

private:
  const std::string &data;
  const std::string &dir;
  std::map<std::string, const json *> byKey;
};

std::string modelKey(const CheckpointTensor &entry) {
  return entry.kind + "/" + entry.name;
}

std::string optimizerKey(const std::string &param, const std::string &name) {
  return "optimizer/" + param + "/" + name;
}

json describeModel(const std::vector<CheckpointTensor> &model) {
  json entries = json::array();
  for (const CheckpointTensor &entry : model) {
    json record = {{"name", entry.name},
                   {"kind", entry.kind},
                   {"shape", entry.value.sizes().vec()}};
    if (entry.isPiece()) {
      record["offset"] = entry.offset;
      record["full_shape"] = entry.fullShape;
    }
    entries.push_back(std::move(record));
  }
  return {{"fingerprint", modelFingerprint(model)}, {"entries", entries}};
}

json describeOptimizer(const CheckpointState &state, TensorPacker &packer) {
  json params = json::array();
  for (const CheckpointOptimizerEntry &entry : state.optimizerState) {
    json names = json::array();
    for (const auto &[name, tensor] : entry.tensors) {
      packer.add(optimizerKey(entry.param, name), tensor);
      names.push_back(name);
    }
    json record = {{"param", entry.param}, {"step", entry.step}, {"state", names}};
    if (entry.offset >= 0) {
      record["offset"] = entry.offset;
      record["length"] = entry.length;
    }
    params.push_back(std::move(record));
  }
  return {{"kind", state.optimizer}, {"params", params}};
}

json describeState(const CheckpointState &state, TensorPacker &packer) {
  for (const CheckpointTensor &entry : state.model)
    packer.add(modelKey(entry), entry.value);
  json settings = json::array();
  for (const auto &[flag, value] : state.settings)
    settings.push_back({flag, value});
  json body = {
      {"format", kCheckpointFormat},
      {"version", kCheckpointVersion},
      {"step", state.step},
      {"epoch", state.epoch},
      {"batch", state.batch},
      {"seed", state.seed},
      {"epoch_progress",
       {{"loss_sum", state.epochLossSum},
        {"accuracy_sum", state.epochAccuracySum},
        {"steps", state.epochSteps},
        {"seconds", state.epochSeconds}}},
      {"settings", settings},
      {"model", describeModel(state.model)},
      {"optimizer", describeOptimizer(state, packer)},
  };
  packer.add("rng/cpu", state.generatorState);
  if (state.runId != 0)
    body["run_id"] = formatRunId(state.runId);
  if (state.shard.worldSize > 0)
    body["shard"] = {{"rank", state.shard.rank},
                     {"world_size", state.shard.worldSize},
                     {"mode", state.shard.mode}};
  body["tensors"] = packer.records;
  body["data_file"] = kDataFile;
  body["data_bytes"] = packer.size;
  return body;
}

json readMeta(const std::string &dir) {
  fs::path path = fs::path(dir) / kMetaFile;
  std::error_code ec;
  if (!fs::exists(path, ec))
    corrupt(dir, std::string("it has no ") + kMetaFile);
  try {
    return json::parse(readWholeFile(fileInside(dir, kMetaFile)));
  } catch (const json::exception &e) {
    corrupt(dir,
            std::string(kMetaFile) + " is not valid JSON (" + e.what() + ")");
  }
}

void checkFormat(const json &meta, const std::string &dir) {
  if (!meta.is_object() || meta.value("format", "") != kCheckpointFormat)
    corrupt(dir, std::string(kMetaFile) + " is not a SpikeMesh checkpoint");
  int version = meta.value("version", 0);
  if (version > kCheckpointVersion)
    throw Error("checkpoint '" + dir + "' has version " +
                std::to_string(version) + ", newer than this snn-run reads (" +
                std::to_string(kCheckpointVersion) + ")");
}

std::string readData(const json &meta, const std::string &dir) {
  fs::path path = fs::path(dir) / kDataFile;
  std::error_code ec;
  if (!fs::exists(path, ec))
    corrupt(dir, std::string("it has no ") + kDataFile);
  std::string data = readWholeFile(fileInside(dir, kDataFile));
  size_t expected = meta.at("data_bytes").get<size_t>();
  if (data.size() != expected)
    corrupt(dir, std::string(kDataFile) + " has " +
                     std::to_string(data.size()) + " bytes, expected " +
                     std::to_string(expected) +
                     (data.size() < expected ? " (truncated)" : ""));
  return data;
}

void verifyChecksum(json meta, const std::string &data,
                    const std::string &dir) {
  std::string stored = meta.value("checksum", "");
  meta.erase("checksum");
  std::string actual = checksumOf(meta, data);
  if (stored != actual)
    corrupt(dir, "checksum mismatch (stored " + stored + ", contents " +
                     actual + ")");
}

std::vector<CheckpointTensor> unpackModel(const json &meta,
                                          const TensorUnpacker &tensors) {
  std::vector<CheckpointTensor> model;
  for (const json &entry : meta.at("model").at("entries")) {
    CheckpointTensor tensor;
    tensor.name = entry.at("name").get<std::string>();
    tensor.kind = entry.at("kind").get<std::string>();
    tensor.value = tensors.get(modelKey(tensor));
    if (entry.contains("offset")) {
      tensor.offset = entry.at("offset").get<int64_t>();
      tensor.fullShape = entry.at("full_shape").get<std::vector<int64_t>>();
    }
    model.push_back(std::move(tensor));
  }
  return model;
}

std::vector<CheckpointOptimizerEntry>
unpackOptimizer(const json &optimizer, const TensorUnpacker &tensors) {
  std::vector<CheckpointOptimizerEntry> entries;
  for (const json &param : optimizer.at("params")) {
    CheckpointOptimizerEntry entry;
    entry.param = param.at("param").get<std::string>();
    entry.step = param.at("step").get<int64_t>();
    for (const json &name : param.at("state"))
      entry.tensors.emplace_back(
          name.get<std::string>(),
          tensors.get(optimizerKey(entry.param, name.get<std::string>())));
    if (param.contains("offset")) {
      entry.offset = param.at("offset").get<int64_t>();
      entry.length = param.at("length").get<int64_t>();
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

/// "run_id" (16 hex digits, not 0), or 0 when the checkpoint predates it.
uint64_t parseRunId(const json &meta, const std::string &dir) {
  if (!meta.contains("run_id"))
    return 0;
  std::string text = meta.at("run_id").get<std::string>();
  uint64_t runId = 0;
  bool valid = text.size() == 16;
  for (char c : text) {
    int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    valid = valid && digit >= 0;
    runId = runId << 4 | uint64_t(digit & 15);
  }
  if (!valid || runId == 0)
    corrupt(dir, "run_id '" + text + "' is not 16 hex digits naming a run");
  return runId;
}

CheckpointState unpackState(const json &meta, const std::string &data,
                            const std::string &dir) {
  TensorUnpacker tensors(meta.at("tensors"), data, dir);
  CheckpointState state;
  state.step = meta.at("step").get<int64_t>();
  state.epoch = meta.at("epoch").get<int64_t>();
  state.batch = meta.at("batch").get<int64_t>();
  state.seed = meta.at("seed").get<uint64_t>();
  const json &progress = meta.at("epoch_progress");
  state.epochLossSum = progress.at("loss_sum").get<double>();
  state.epochAccuracySum = progress.at("accuracy_sum").get<double>();
  state.epochSteps = progress.at("steps").get<int64_t>();
  state.epochSeconds = progress.at("seconds").get<double>();
  for (const json &setting : meta.at("settings"))
    state.settings.emplace_back(setting.at(0).get<std::string>(),
                                setting.at(1).get<std::string>());
  state.model = unpackModel(meta, tensors);
  state.optimizer = meta.at("optimizer").at("kind").get<std::string>();
  state.optimizerState = unpackOptimizer(meta.at("optimizer"), tensors);
  state.generatorState = tensors.get("rng/cpu");
  state.runId = parseRunId(meta, dir);
  if (meta.contains("shard")) {
    const json &shard = meta.at("shard");
    state.shard.rank = shard.at("rank").get<int>();
    state.shard.worldSize = shard.at("world_size").get<int>();
    state.shard.mode = shard.at("mode").get<std::string>();
  }
  return state;
}

} // namespace

std::string modelFingerprint(const std::vector<CheckpointTensor> &model) {
  // FNV-1a: short, dependency-free, and stable across platforms.
  uint64_t hash = 0xcbf29ce484222325ull;
  auto mix = [&](const std::string &text) {
    for (unsigned char c : text)
      hash = (hash ^ c) * 0x100000001b3ull;
  };
  for (const CheckpointTensor &entry : model) {
    mix(entry.name + ":" + entry.kind + ":");
    for (int64_t dim :
         entry.isPiece() ? entry.fullShape : entry.value.sizes().vec())
      mix(std::to_string(dim) + ",");
    mix(";");
  }
  char text[24];
  std::snprintf(text, sizeof(text), "%016llx",
                static_cast<unsigned long long>(hash));
  return std::string("fnv1a64:") + text;
}

std::string formatRunId(uint64_t runId) {
  char text[24];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(runId));
  return text;
}

void writeCheckpoint(const std::string &dir, const CheckpointState &state) {
  TensorPacker packer;
  json body = describeState(state, packer);
  std::string meta = body.dump();
  uLong crc = crcOf(crc32(0L, Z_NULL, 0), meta.data(), meta.size());
  writeFileSynced((fs::path(dir) / kDataFile).string(),
                  [&](const ByteSink &sink) { crc = packer.write(sink, crc); });
  body["checksum"] = formatChecksum(crc);
  writeFileSynced((fs::path(dir) / kMetaFile).string(), body.dump(1) + "\n");
}

CheckpointState readCheckpoint(const std::string &dir) {
  json meta = readMeta(dir);
  checkFormat(meta, dir);
  try {
    std::string data = readData(meta, dir);
    verifyChecksum(meta, data, dir);
    return unpackState(meta, data, dir);
  } catch (const json::exception &e) {
    corrupt(dir, std::string(kMetaFile) + " lacks a field (" + e.what() + ")");
  }
}

} // namespace snn::runtime
