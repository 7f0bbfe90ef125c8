//===- Idx.cpp - IDX files (the MNIST family's format) --------------------===//

#include "snn/Runtime/Data/Idx.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/Gzip.h"

#include <cstdio>
#include <limits>

namespace snn::runtime {

namespace {

constexpr unsigned char kUnsignedByte = 0x08;

uint32_t readBigEndian32(const std::string &bytes, size_t offset) {
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i)
    value = (value << 8) | static_cast<unsigned char>(bytes[offset + i]);
  return value;
}

} // namespace

IdxArray parseIdx(std::string bytes, const std::string &name) {
  if (bytes.size() < 4 || bytes[0] != 0 || bytes[1] != 0)
    throw Error(name + ": not an IDX file (bad magic)");
  auto type = static_cast<unsigned char>(bytes[2]);
  auto rank = static_cast<unsigned char>(bytes[3]);
  if (type != kUnsignedByte) {
    char code[8];
    std::snprintf(code, sizeof(code), "0x%02x", type);
    throw Error(name + ": IDX element type " + code +
                " is not supported (only unsigned bytes, 0x08)");
  }
  size_t header = 4 + 4 * size_t(rank);
  if (rank == 0 || bytes.size() < header)
    throw Error(name + ": truncated IDX header");
  IdxArray array;
  int64_t count = 1;
  for (size_t i = 0; i < rank; ++i) {
    int64_t dim = readBigEndian32(bytes, 4 + 4 * i);
    if (dim != 0 && count > std::numeric_limits<int64_t>::max() / dim)
      throw Error(name + ": IDX dimensions are too large");
    array.shape.push_back(dim);
    count *= dim;
  }
  if (int64_t(bytes.size() - header) != count)
    throw Error(
        name + ": IDX data has " + std::to_string(bytes.size() - header) +
        " bytes, its dimensions need " + std::to_string(count) +
        (int64_t(bytes.size() - header) < count ? " (truncated file?)" : ""));
  bytes.erase(0, header);
  array.data = std::move(bytes);
  return array;
}

IdxArray readIdxFile(const std::string &path) {
  return parseIdx(readGzipFile(path), path);
}

} // namespace snn::runtime
