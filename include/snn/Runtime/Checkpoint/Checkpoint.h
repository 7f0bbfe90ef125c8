//===- Checkpoint.h - One checkpoint directory on disk ----------*- C++ -*-===//
//
// A checkpoint is everything a training run needs to continue bit-
// identically: parameters, buffers, optimizer state, the position in the
// data order, the CPU generator state and the run's settings. On disk
// (docs/checkpoints.md) it is `checkpoint.json` (metadata, readable with any
// JSON tool) plus `tensors.bin` (raw little-endian tensor data), guarded by a
// CRC-32 over both. This file reads and writes one such directory;
// CheckpointDirectory.h publishes them atomically.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_CHECKPOINT_CHECKPOINT_H
#define SNN_RUNTIME_CHECKPOINT_CHECKPOINT_H

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace snn::runtime {

constexpr const char *kCheckpointFormat = "spikemesh-checkpoint";
constexpr int kCheckpointVersion = 1;

/// A parameter or buffer of the model. Together the entries' names, shapes
/// and kinds are the model's fingerprint.
struct CheckpointTensor {
  std::string name;
  std::string kind; // "parameter" or "buffer"
  at::Tensor value;
  /// A rank's piece of a sharded checkpoint (ShardedCheckpoint.h): `value`
  /// is elements [offset, offset + numel) of the flattened tensor of shape
  /// `fullShape`. -1: `value` is the whole tensor.
  int64_t offset = -1;
  std::vector<int64_t> fullShape;

  bool isPiece() const { return offset >= 0; }
};

/// The optimizer state of one parameter (Optimizer.h's ParamState, named).
struct CheckpointOptimizerEntry {
  std::string param;
  int64_t step = 0;
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  /// The state of a piece [offset, offset + length) of the flattened
  /// parameter (sharded checkpoints); -1: of the whole parameter.
  int64_t offset = -1;
  int64_t length = 0;
};

/// Which rank of a sharded run wrote a checkpoint (ShardedCheckpoint.h);
/// worldSize 0: an ordinary, whole checkpoint.
struct CheckpointShard {
  int rank = 0;
  int worldSize = 0;
  std::string mode; // "zero" or "fsdp"
};

struct CheckpointState {
  /// Optimizer steps done; the next step has this index.
  int64_t step = 0;
  /// Epoch and batch index of the next step.
  int64_t epoch = 0;
  int64_t batch = 0;
  /// Seeds the data order.
  uint64_t seed = 0;
  /// The training run that wrote it: drawn at random when a run starts
  /// fresh, the same on every rank, kept across --resume. Every shard of a
  /// sharded checkpoint must carry the same one. 0: unknown (a checkpoint
  /// written before the field existed).
  uint64_t runId = 0;
  /// The current epoch's running sums, so that its "epoch" log line after
  /// a resume averages over all of its steps.
  double epochLossSum = 0.0;
  double epochAccuracySum = 0.0;
  int64_t epochSteps = 0;
  double epochSeconds = 0.0;
  /// Settings a resumed run must repeat, as (flag, value) text.
  std::vector<std::pair<std::string, std::string>> settings;
  /// Parameters then buffers, in manifest order.
  std::vector<CheckpointTensor> model;
  std::string optimizer; // "sgd", "adam", "adamw"
  std::vector<CheckpointOptimizerEntry> optimizerState;
  /// ATen's default CPU generator (Generator::get_state(), uint8).
  at::Tensor generatorState;
  CheckpointShard shard;
};

/// "fnv1a64:<hex>" over the names, shapes and kinds of `model` (a piece
/// counts with its full shape, so every rank's file names the same model).
std::string modelFingerprint(const std::vector<CheckpointTensor> &model);

/// The run id as checkpoint.json writes it: 16 lowercase hex digits.
std::string formatRunId(uint64_t runId);

/// Writes checkpoint.json and tensors.bin into the existing directory `dir`
/// (each file fsync'ed). Not atomic by itself.
void writeCheckpoint(const std::string &dir, const CheckpointState &state);

/// Reads and verifies the checkpoint in `dir`. Throws Error naming `dir` if a
/// file is missing, truncated, malformed or fails the checksum.
CheckpointState readCheckpoint(const std::string &dir);

} // namespace snn::runtime

#endif // SNN_RUNTIME_CHECKPOINT_CHECKPOINT_H
