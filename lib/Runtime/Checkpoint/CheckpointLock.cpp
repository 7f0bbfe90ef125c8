//===- CheckpointLock.cpp - One job per checkpoint directory --------------===//

#include "snn/Runtime/Checkpoint/CheckpointLock.h"
#include "snn/Runtime/Support/Error.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace snn::runtime {

namespace {

std::string hostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0)
    return "?";
  return name;
}

/// "pid P host H" as the holder wrote it. The holder writes right after it
/// locks, so a reader that finds the file empty looks again briefly.
std::string readHolder(int fd) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    char text[512] = {};
    ssize_t got = ::pread(fd, text, sizeof(text) - 1, 0);
    if (got > 0)
      return std::string(text, size_t(got));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return {};
}

/// "pid P" (and "on H" when H is another host), from readHolder's text.
std::string describeHolder(const std::string &record) {
  char host[256] = {};
  long pid = 0;
  if (std::sscanf(record.c_str(), "pid %ld host %255s", &pid, host) < 1)
    return "pid unknown";
  std::string text = "pid " + std::to_string(pid);
  if (host[0] && hostName() != host)
    text += std::string(" on ") + host;
  return text;
}

} // namespace

std::string CheckpointLock::pathFor(const std::string &dir) {
  return (std::filesystem::path(dir) / ".lock").string();
}

CheckpointLock::CheckpointLock(const std::string &dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw Error("--checkpoint: cannot create '" + dir + "': " + ec.message());
  std::string path = pathFor(dir);
  int file = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (file < 0)
    throw Error("--checkpoint: cannot open '" + path + "': " + std::strerror(errno));
  if (::flock(file, LOCK_EX | LOCK_NB) != 0) {
    int code = errno;
    if (code == EWOULDBLOCK) {
      std::string holder = describeHolder(readHolder(file));
      ::close(file);
      throw Error("--checkpoint " + dir + " is in use by another job (" + holder + ")");
    }
    ::close(file); // no locks on this file system: run unlocked
    return;
  }
  std::string record = "pid " + std::to_string(::getpid()) + " host " + hostName() + "\n";
  // Best effort: the record only feeds the other job's message.
  if (::ftruncate(file, 0) == 0)
    (void)!::pwrite(file, record.data(), record.size(), 0);
  fd = file;
}

CheckpointLock::~CheckpointLock() {
  if (fd >= 0)
    ::close(fd); // releases the flock
}

} // namespace snn::runtime
