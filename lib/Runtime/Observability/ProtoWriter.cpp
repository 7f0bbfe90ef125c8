//===- ProtoWriter.cpp - Protocol buffer wire format, by hand -------------===//

#include "snn/Runtime/Observability/ProtoWriter.h"

#include <cstring>

namespace snn::runtime {

namespace {

enum WireType { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

} // namespace

std::string ProtoWriter::varint(uint64_t value) {
  std::string bytes;
  while (value >= 0x80) {
    bytes.push_back(char((value & 0x7F) | 0x80));
    value >>= 7;
  }
  bytes.push_back(char(value));
  return bytes;
}

void ProtoWriter::key(int field, int wireType) {
  out += varint((uint64_t(field) << 3) | uint64_t(wireType));
}

void ProtoWriter::littleEndian(uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(char((value >> (8 * i)) & 0xFF));
}

void ProtoWriter::varintField(int field, uint64_t value) {
  key(field, kVarint);
  out += varint(value);
}

void ProtoWriter::doubleField(int field, double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  key(field, kFixed64);
  littleEndian(bits, 8);
}

void ProtoWriter::floatField(int field, float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  key(field, kFixed32);
  littleEndian(bits, 4);
}

void ProtoWriter::bytesField(int field, std::string_view bytes) {
  key(field, kLengthDelimited);
  out += varint(bytes.size());
  out.append(bytes.data(), bytes.size());
}

} // namespace snn::runtime
