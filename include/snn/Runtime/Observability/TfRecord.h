//===- TfRecord.h - TFRecord framing ----------------------------*- C++ -*-===//
//
// One record of a TFRecord file (TensorBoard event files are such files):
//   uint64 length (little-endian), uint32 masked CRC-32C of those 8 bytes,
//   the payload, uint32 masked CRC-32C of the payload.
// A reader checks both CRCs, so a file cut inside a record (a crash while
// writing) loses that record only.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_OBSERVABILITY_TFRECORD_H
#define SNN_RUNTIME_OBSERVABILITY_TFRECORD_H

#include <string>
#include <string_view>

namespace snn::runtime {

/// The framed record of `payload`: 16 bytes longer than it.
std::string tfRecord(std::string_view payload);

} // namespace snn::runtime

#endif // SNN_RUNTIME_OBSERVABILITY_TFRECORD_H
