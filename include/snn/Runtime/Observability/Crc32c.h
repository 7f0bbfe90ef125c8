//===- Crc32c.h - CRC-32C (Castagnoli) --------------------------*- C++ -*-===//
//
// The checksum of TFRecord framing (TensorBoard event files): CRC-32C,
// reflected polynomial 0x82F63B78, and the "masked" form those files store,
// which keeps a CRC of data that itself holds CRCs from looking like one.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_OBSERVABILITY_CRC32C_H
#define SNN_RUNTIME_OBSERVABILITY_CRC32C_H

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace snn::runtime {

/// CRC-32C of `size` bytes, continuing from `crc` (0 for a fresh one):
/// crc32c("123456789") == 0xE3069283.
uint32_t crc32c(const void *data, size_t size, uint32_t crc = 0);

inline uint32_t crc32c(std::string_view bytes) {
  return crc32c(bytes.data(), bytes.size());
}

/// ((crc >> 15) | (crc << 17)) + 0xa282ead8, as TFRecord stores it.
inline uint32_t maskCrc32c(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

} // namespace snn::runtime

#endif // SNN_RUNTIME_OBSERVABILITY_CRC32C_H
