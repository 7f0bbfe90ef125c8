//===- ReplayMain.cpp - Run a fuzz target over saved inputs ---------------===//
//
// The fuzz targets built without libFuzzer (any compiler): each argument is a
// file or a directory of files, each file one input to
// LLVMFuzzerTestOneInput. The suite runs the saved regression inputs and the
// seed corpus this way, so a crash the fuzzer once found stays fixed in the
// ordinary build too.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace {

int replay(const std::filesystem::path &file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "error: %s: cannot open\n", file.c_str());
    return 1;
  }
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::printf("%s (%zu bytes)\n", file.c_str(), bytes.size());
  std::fflush(stdout); // the last name printed is the input that crashed
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  namespace fs = std::filesystem;
  int failures = 0, inputs = 0;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    if (fs::is_directory(argv[i], ec)) {
      for (const fs::directory_entry &entry : fs::directory_iterator(argv[i]))
        if (entry.is_regular_file() && entry.path().filename().string()[0] != '.') {
          failures += replay(entry.path());
          ++inputs;
        }
    } else {
      failures += replay(argv[i]);
      ++inputs;
    }
  }
  std::printf("%d inputs replayed without a crash\n", inputs - failures);
  return failures ? 1 : 0;
}
