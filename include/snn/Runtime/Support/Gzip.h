//===- Gzip.h - Whole-file gzip decompression -------------------*- C++ -*-===//
#ifndef SNN_RUNTIME_SUPPORT_GZIP_H
#define SNN_RUNTIME_SUPPORT_GZIP_H

#include <string>

namespace snn::runtime {

/// Returns the decompressed contents of the gzip file `path` (a file that is
/// not gzip-compressed is returned as is, as zlib's gzread does). Throws Error
/// naming the file if it cannot be opened or the stream is corrupt or
/// truncated.
std::string readGzipFile(const std::string &path);

} // namespace snn::runtime

#endif // SNN_RUNTIME_SUPPORT_GZIP_H
