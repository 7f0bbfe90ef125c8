//===- Crc32c.cpp - CRC-32C (Castagnoli) ----------------------------------===//
//
// Byte-at-a-time with a 256-entry table: event files are written once per
// step, a few hundred bytes, so neither slicing-by-8 nor SSE4.2 would show.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Observability/Crc32c.h"

#include <array>

namespace snn::runtime {

namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u; // reflected 0x1EDC6F41

constexpr std::array<uint32_t, 256> makeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit)
      crc = (crc & 1u) ? (crc >> 1) ^ kPolynomial : crc >> 1;
    table[byte] = crc;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = makeTable();

} // namespace

uint32_t crc32c(const void *data, size_t size, uint32_t crc) {
  const auto *bytes = static_cast<const unsigned char *>(data);
  crc = ~crc;
  for (size_t i = 0; i < size; ++i)
    crc = kTable[(crc ^ bytes[i]) & 0xFFu] ^ (crc >> 8);
  return ~crc;
}

} // namespace snn::runtime
