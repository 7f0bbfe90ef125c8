//===- TfRecord.cpp - TFRecord framing ------------------------------------===//

#include "snn/Runtime/Observability/TfRecord.h"
#include "snn/Runtime/Observability/Crc32c.h"

#include <cstdint>

namespace snn::runtime {

namespace {

void appendLittleEndian(std::string &out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(char((value >> (8 * i)) & 0xFF));
}

} // namespace

std::string tfRecord(std::string_view payload) {
  std::string record;
  record.reserve(payload.size() + 16);
  appendLittleEndian(record, payload.size(), 8);
  appendLittleEndian(record, maskCrc32c(crc32c(record)), 4);
  record.append(payload.data(), payload.size());
  appendLittleEndian(record, maskCrc32c(crc32c(payload)), 4);
  return record;
}

} // namespace snn::runtime
