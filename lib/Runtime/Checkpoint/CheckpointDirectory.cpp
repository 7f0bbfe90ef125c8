//===- CheckpointDirectory.cpp - Publishing checkpoints atomically --------===//

#include "snn/Runtime/Checkpoint/CheckpointDirectory.h"
#include "snn/Runtime/Support/DurableFile.h"
#include "snn/Runtime/Support/Error.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>

namespace snn::runtime {

namespace fs = std::filesystem;

namespace {

constexpr const char *kLatestFile = "latest";
constexpr const char *kTempSuffix = ".tmp";

/// The step count of a "step-XXXXXXXX" name, or -1 for any other name.
int64_t stepOfName(const std::string &name) {
  const std::string prefix = "step-";
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix))
    return -1;
  std::string digits = name.substr(prefix.size());
  if (digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(),
                   [](unsigned char c) { return std::isdigit(c); }))
    return -1;
  return std::stoll(digits);
}

std::string trim(std::string text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.pop_back();
  return text;
}

void removeQuietly(const fs::path &path) {
  std::error_code ec;
  fs::remove_all(path, ec);
}

} // namespace

CheckpointDirectory::CheckpointDirectory(std::string dir, int keep)
    : dir(std::move(dir)), keep(keep) {
  if (keep < 1)
    throw Error("--keep-checkpoints must be at least 1");
}

std::string CheckpointDirectory::nameForStep(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "step-%08lld",
                static_cast<long long>(step));
  return name;
}

std::vector<std::string> CheckpointDirectory::list() const {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    int64_t step = stepOfName(it->path().filename().string());
    if (step >= 0 && it->is_directory(ec))
      found.emplace_back(step, it->path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> paths;
  for (auto &entry : found)
    paths.push_back(std::move(entry.second));
  return paths;
}

std::string CheckpointDirectory::latest() const {
  fs::path pointer = fs::path(dir) / kLatestFile;
  std::error_code ec;
  if (fs::exists(pointer, ec)) {
    std::string name = trim(readWholeFile(pointer.string()));
    fs::path named = fs::path(dir) / name;
    // A `latest` naming a removed checkpoint falls back to the newest one
    // left, so deleting a corrupt checkpoint makes resume use the previous.
    if (stepOfName(name) >= 0 && fs::is_directory(named, ec))
      return named.string();
  }
  std::vector<std::string> complete = list();
  return complete.empty() ? std::string() : complete.back();
}

std::string CheckpointDirectory::tempPath(int64_t step) const {
  return (fs::path(dir) / (nameForStep(step) + kTempSuffix)).string();
}

std::string CheckpointDirectory::beginSave(int64_t step) {
  fs::path temp = tempPath(step);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw Error("--checkpoint: cannot create '" + dir + "': " + ec.message());
  removeQuietly(temp);
  if (!fs::create_directory(temp, ec) && ec)
    throw Error("cannot create '" + temp.string() + "': " + ec.message());
  return temp.string();
}

std::string CheckpointDirectory::commitSave(int64_t step) {
  std::string name = nameForStep(step);
  fs::path final = fs::path(dir) / name;
  fs::path temp = tempPath(step);
  std::error_code ec;
  syncDirectory(temp.string());
  removeQuietly(final);
  fs::rename(temp, final, ec);
  if (ec)
    throw Error("cannot rename '" + temp.string() + "' to '" + final.string() +
                "': " + ec.message());
  syncDirectory(dir);
  replaceFileDurably((fs::path(dir) / kLatestFile).string(), name + "\n");
  prune(final.string());
  return final.string();
}

void CheckpointDirectory::abortSave(int64_t step) {
  removeQuietly(tempPath(step));
}

std::string CheckpointDirectory::save(const CheckpointState &state) {
  std::string temp = beginSave(state.step);
  try {
    writeCheckpoint(temp, state);
    return commitSave(state.step);
  } catch (...) {
    abortSave(state.step);
    throw;
  }
}

void CheckpointDirectory::prune(const std::string &keepAlways) const {
  std::vector<std::string> complete = list();
  size_t excess = complete.size() > size_t(keep) ? complete.size() - keep : 0;
  for (size_t i = 0; i < complete.size() && excess > 0; ++i)
    if (complete[i] != keepAlways) {
      removeQuietly(complete[i]);
      --excess;
    }
  // Leftovers of saves that crashed half-way.
  std::vector<fs::path> stale;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::string file = it->path().filename().string();
    size_t suffix = std::char_traits<char>::length(kTempSuffix);
    if (file.size() > suffix &&
        file.compare(file.size() - suffix, suffix, kTempSuffix) == 0 &&
        stepOfName(file.substr(0, file.size() - suffix)) >= 0)
      stale.push_back(it->path());
  }
  for (const fs::path &path : stale)
    removeQuietly(path);
}

} // namespace snn::runtime
