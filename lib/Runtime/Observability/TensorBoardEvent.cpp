//===- TensorBoardEvent.cpp - tensorflow.Event messages -------------------===//

#include "snn/Runtime/Observability/TensorBoardEvent.h"
#include "snn/Runtime/Observability/ProtoWriter.h"

namespace snn::runtime {

namespace {

// event.proto
constexpr int kEventWallTime = 1, kEventStep = 2, kEventFileVersion = 3,
              kEventSummary = 5;
// summary.proto
constexpr int kSummaryValue = 1, kValueTag = 1, kValueSimpleValue = 2;

} // namespace

std::string fileVersionEvent(double wallTime) {
  ProtoWriter event;
  event.doubleField(kEventWallTime, wallTime);
  event.bytesField(kEventFileVersion, "brain.Event:2");
  return event.bytes();
}

std::string scalarsEvent(double wallTime, int64_t step,
                         const std::vector<Scalar> &scalars) {
  ProtoWriter summary;
  for (const Scalar &scalar : scalars) {
    ProtoWriter value;
    value.bytesField(kValueTag, scalar.tag);
    value.floatField(kValueSimpleValue, float(scalar.value));
    summary.bytesField(kSummaryValue, value.bytes());
  }
  ProtoWriter event;
  event.doubleField(kEventWallTime, wallTime);
  // int64 is a two's-complement varint: a negative step takes ten bytes.
  event.varintField(kEventStep, uint64_t(step));
  event.bytesField(kEventSummary, summary.bytes());
  return event.bytes();
}

} // namespace snn::runtime
