//===- ProtoWriter.h - Protocol buffer wire format, by hand -----*- C++ -*-===//
//
// The few wire types a TensorBoard Event needs (varint, 64-bit, 32-bit,
// length-delimited), so that snn-run writes event files without generated
// code for TensorFlow's protos. Fields are appended in the order called;
// a nested message is another writer's bytes() passed to message().
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_OBSERVABILITY_PROTOWRITER_H
#define SNN_RUNTIME_OBSERVABILITY_PROTOWRITER_H

#include <cstdint>
#include <string>
#include <string_view>

namespace snn::runtime {

class ProtoWriter {
public:
  /// int64 / uint64 / bool / enum (wire type 0); a negative int64 takes
  /// ten bytes, as protobuf encodes it.
  void varintField(int field, uint64_t value);
  /// double (wire type 1), little-endian.
  void doubleField(int field, double value);
  /// float (wire type 5), little-endian.
  void floatField(int field, float value);
  /// string, bytes or an embedded message (wire type 2).
  void bytesField(int field, std::string_view bytes);

  const std::string &bytes() const { return out; }

  /// The base-128 encoding of `value` (exposed for the record tests).
  static std::string varint(uint64_t value);

private:
  void key(int field, int wireType);
  void littleEndian(uint64_t value, int bytes);

  std::string out;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_OBSERVABILITY_PROTOWRITER_H
