//===- DurableFile.cpp - Files that survive a crash -----------------------===//

#include "snn/Runtime/Support/DurableFile.h"
#include "snn/Runtime/Support/Error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace snn::runtime {

namespace {

[[noreturn]] void failWrite(const std::string &path, int code) {
  throw Error(path + ": cannot write: " + std::strerror(code));
}

/// write(2) until done; returns 0 or the errno of the failure.
int writeAll(int fd, const char *data, size_t size) {
  while (size > 0) {
    ssize_t written = ::write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR)
        continue;
      return errno;
    }
    data += written;
    size -= size_t(written);
  }
  return 0;
}

} // namespace

void writeFileSynced(const std::string &path, const std::string &bytes) {
  writeFileSynced(path, [&](const ByteSink &sink) { sink(bytes.data(), bytes.size()); });
}

void writeFileSynced(const std::string &path,
                     const std::function<void(const ByteSink &)> &produce) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    failWrite(path, errno);
  int code = 0;
  try {
    produce([&](const char *data, size_t size) {
      if (code == 0)
        code = writeAll(fd, data, size);
    });
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (code == 0 && ::fsync(fd) != 0)
    code = errno;
  if (::close(fd) != 0 && code == 0)
    code = errno;
  if (code != 0)
    failWrite(path, code);
}

void syncDirectory(const std::string &dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(),
                  O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return; // best effort: some file systems refuse to open directories
  ::fsync(fd);
  ::close(fd);
}

void replaceFileDurably(const std::string &path, const std::string &bytes) {
  std::string temp = path + ".tmp." + std::to_string(::getpid());
  try {
    writeFileSynced(temp, bytes);
  } catch (...) {
    std::remove(temp.c_str());
    throw;
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    int code = errno;
    std::remove(temp.c_str());
    failWrite(path, code);
  }
  syncDirectory(std::filesystem::path(path).parent_path().string());
}

void requireRegularFile(const std::string &path) {
  std::error_code ec;
  std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
    throw Error(path + ": not a regular file");
}

std::string fileInside(const std::string &dir, const std::string &name) {
  namespace fs = std::filesystem;
  fs::path path = fs::path(dir) / name;
  std::error_code ec;
  fs::path root = fs::weakly_canonical(dir, ec);
  fs::path target = ec ? fs::path() : fs::weakly_canonical(path, ec);
  if (ec)
    return path.string(); // unreadable: the open that follows names the cause
  auto [rootEnd, targetAt] = std::mismatch(root.begin(), root.end(), target.begin(), target.end());
  if (rootEnd != root.end())
    throw Error(path.string() + ": resolves to '" + target.string() + "', outside '" + dir +
                "' (a link out of the directory is not followed)");
  return path.string();
}

std::string readWholeFile(const std::string &path) {
  requireRegularFile(path);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad())
    throw Error(path + ": read failed");
  return bytes.str();
}

} // namespace snn::runtime
