//===- NpyFuzzer.cpp - Fuzz target: the .npy reader -----------------------===//
//
// One input = the bytes of a .npy file. parseNpy either returns a float32
// array whose element count matches its shape or throws Error; any other
// exception, a crash, a sanitizer report or an allocation beyond the input's
// size is a finding.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/Npy.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char *>(data), size));
  try {
    snn::runtime::NpyArray array = snn::runtime::parseNpy(in, "fuzz.npy");
    if (int64_t(array.data.size()) != snn::runtime::numElements(array.shape))
      std::abort(); // the reader promised a dense array of its shape
  } catch (const snn::runtime::Error &) {
  }
  return 0;
}
