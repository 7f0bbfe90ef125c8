//===- ManifestFuzzer.cpp - Fuzz target: the manifest reader --------------===//
//
// One input = the text of a manifest.json. parseManifest either returns a
// manifest or throws ManifestError (a one-line `error:` in the tools); any
// other exception, a crash or a sanitizer report is a finding.
//
//===----------------------------------------------------------------------===//

#include "snn/Schema/Manifest.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  try {
    snn::schema::Manifest manifest = snn::schema::parseManifest(text, "manifest.json");
    (void)manifest.stageCount();
  } catch (const snn::schema::ManifestError &) {
  }
  return 0;
}
