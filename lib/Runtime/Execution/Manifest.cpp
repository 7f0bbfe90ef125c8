//===- Manifest.cpp - manifest.json through the schema --------------------===//
#include "snn/Runtime/Execution/Manifest.h"
#include "snn/Runtime/Support/Error.h"

#include <cerrno>
#include <cstring>
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
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(path + ": cannot open: " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  return parseManifest(text.str(), path);
}

const ProgramSpec &programForRank(const Manifest &manifest, int rank) {
  try {
    return manifest.programForRank(rank);
  } catch (const schema::ManifestError &e) {
    throw Error(e.what());
  }
}

} // namespace snn::runtime
