//===- TensorBoardEvent.h - tensorflow.Event messages -----------*- C++ -*-===//
//
// The two Event messages snn-run writes, serialized by hand (ProtoWriter.h)
// with the field numbers of TensorBoard's event.proto and summary.proto:
//   Event   { double wall_time = 1; int64 step = 2;
//             oneof what { string file_version = 3; Summary summary = 5; } }
//   Summary { repeated Value value = 1; }
//   Value   { string tag = 1; float simple_value = 2; }
// TensorBoard shows simple_value summaries as scalars (its "scalars" plugin
// reads them as legacy summaries without metadata).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_OBSERVABILITY_TENSORBOARDEVENT_H
#define SNN_RUNTIME_OBSERVABILITY_TENSORBOARDEVENT_H

#include <cstdint>
#include <string>
#include <vector>

namespace snn::runtime {

/// One point of a TensorBoard scalar series; stored as float32.
struct Scalar {
  std::string tag;
  double value = 0.0;
};

/// The first event of every file: file_version "brain.Event:2".
std::string fileVersionEvent(double wallTime);

/// An Event with a Summary of `scalars` at `step`.
std::string scalarsEvent(double wallTime, int64_t step,
                         const std::vector<Scalar> &scalars);

} // namespace snn::runtime

#endif // SNN_RUNTIME_OBSERVABILITY_TENSORBOARDEVENT_H
