//===- Gzip.cpp - Whole-file gzip decompression ---------------------------===//

#include "snn/Runtime/Support/Gzip.h"
#include "snn/Runtime/Support/Error.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace snn::runtime {

namespace {

struct GzFileCloser {
  void operator()(gzFile_s *file) const {
    if (file)
      gzclose_r(file);
  }
};
using GzFile = std::unique_ptr<gzFile_s, GzFileCloser>;

[[noreturn]] void failCorrupt(gzFile file, const std::string &path) {
  int code = Z_OK;
  const char *message = gzerror(file, &code);
  throw Error(path + ": corrupt gzip data (" +
              std::string(message && *message ? message : "read failed") + ")");
}

} // namespace

std::string readGzipFile(const std::string &path) {
  errno = 0;
  GzFile file(gzopen(path.c_str(), "rb"));
  if (!file)
    throw Error(path + ": cannot open: " +
                (errno ? std::strerror(errno) : "out of memory"));
  // Large reads keep zlib's per-call overhead negligible (Fashion-MNIST's
  // training images are 47 MB).
  gzbuffer(file.get(), 1 << 20);
  std::string bytes;
  constexpr size_t kChunk = 1 << 22;
  for (;;) {
    size_t used = bytes.size();
    bytes.resize(used + kChunk);
    int got = gzread(file.get(), bytes.data() + used, unsigned(kChunk));
    if (got < 0)
      failCorrupt(file.get(), path);
    bytes.resize(used + size_t(got));
    if (size_t(got) < kChunk)
      break;
  }
  // A stream cut short reads as a short file; zlib only reports it here.
  int code = Z_OK;
  gzerror(file.get(), &code);
  if (code != Z_OK)
    failCorrupt(file.get(), path);
  if (gzclose_r(file.release()) == Z_BUF_ERROR)
    throw Error(path + ": truncated gzip file (the stream ends early)");
  return bytes;
}

} // namespace snn::runtime
