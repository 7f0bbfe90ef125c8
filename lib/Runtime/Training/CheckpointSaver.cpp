//===- CheckpointSaver.cpp - Checkpoints that do not stall training -------===//

#include "snn/Runtime/Training/CheckpointSaver.h"
#include "snn/Runtime/Checkpoint/NonFiniteValues.h"
#include "snn/Runtime/Support/Error.h"

#include <filesystem>
#include <memory>

namespace snn::runtime {

CheckpointSaver::CheckpointSaver(CheckpointDirectory &dir, CheckpointPolicy policy,
                                 std::function<void(const std::string &)> warn)
    : dir(dir), options(policy), warn(std::move(warn)), writer(policy.background) {}

void CheckpointSaver::failed(int64_t step, const std::string &cause, bool speaks) {
  std::string what = "--checkpoint " + dir.path() + ": cannot save " +
                     CheckpointDirectory::nameForStep(step) + ": " + cause;
  if (options.onError == CheckpointErrors::Stop)
    throw Error(what);
  if (!speaks)
    return;
  std::string latest = dir.latest();
  warn(what + "; " +
       (latest.empty() ? std::string("no checkpoint is saved yet")
                       : "the latest checkpoint is still " +
                             std::filesystem::path(latest).filename().string()) +
       " (--checkpoint-errors continue)");
}

void CheckpointSaver::complete() {
  if (pendingStep < 0)
    return;
  int64_t step = pendingStep;
  pendingStep = -1;
  std::string error = writer.wait();
  if (!shardIndex) {
    std::shared_ptr<std::string> refused = std::move(refusal);
    if (refused && !refused->empty())
      throw Error(*refused);
    if (!error.empty())
      failed(step, error, true);
    return;
  }
  ShardIndex index = *shardIndex;
  shardIndex.reset();
  try {
    publishShardedSave(dir, index, *shardGroup, error);
  } catch (const Error &e) {
    // The same message on every rank (agreed), so every rank decides alike.
    failed(step, e.what(), shardGroup->rank() == 0);
  }
}

void CheckpointSaver::poll() {
  if (pendingStep >= 0 && !shardIndex && !writer.running())
    complete();
}

void CheckpointSaver::saveWhole(CheckpointState state) {
  complete();
  pendingStep = state.step;
  auto saved = std::make_shared<const CheckpointState>(std::move(state));
  CheckpointDirectory *target = &dir;
  refusal = std::make_shared<std::string>();
  // Looked for here rather than on the training thread: writing reads every
  // value anyway. save() removes its temporary directory when it fails.
  writer.start([target, saved, refused = refusal] {
    *refused = nonFiniteRefusal(*saved);
    if (refused->empty())
      target->save(*saved);
  });
  if (!options.background)
    complete();
}

void CheckpointSaver::saveShard(CheckpointState state, const dist::Group &group) {
  complete();
  const int64_t step = state.step;
  try {
    beginShardedSave(dir, step, group);
  } catch (const Error &e) {
    failed(step, e.what(), group.rank() == 0);
    return;
  }
  pendingStep = step;
  shardIndex = shardIndexOf(state, group);
  shardGroup = &group;
  auto saved = std::make_shared<const CheckpointState>(std::move(state));
  const CheckpointDirectory *target = &dir;
  writer.start([target, saved] { writeShard(*target, *saved); });
  if (!options.background)
    complete();
}

} // namespace snn::runtime
