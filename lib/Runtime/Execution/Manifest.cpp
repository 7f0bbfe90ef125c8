//===- Manifest.cpp - manifest.json through the schema --------------------===//
#include "snn/Runtime/Execution/Manifest.h"
#include "snn/Runtime/Support/DurableFile.h"
#include "snn/Runtime/Support/Error.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace snn::runtime {

Manifest parseManifest(const std::string &text, const std::string &name) {
  try {
    return schema::parseManifest(text, name);
  } catch (const schema::ManifestError &e) {
    throw Error(e.what());
  }
}

Manifest readManifest(const std::string &path) {
  // A FIFO or device would block or never end: only a regular file of a
  // manifest's size is read.
  requireRegularFile(path);
  std::error_code ec;
  uintmax_t size = std::filesystem::file_size(path, ec);
  if (!ec && size > schema::kMaxManifestBytes)
    throw Error(path + ": larger than " + std::to_string(schema::kMaxManifestBytes >> 20) +
                " MiB, not a manifest");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(path + ": cannot open: " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  return parseManifest(text.str(), path);
}

} // namespace snn::runtime
