//===- EventFileWriter.h - A TensorBoard event file -------------*- C++ -*-===//
//
// `snn-run train --tensorboard DIR`: one file per invocation, named as
// TensorBoard's own writers name theirs (events.out.tfevents.<10-digit
// seconds>.<host>.<pid>.<writer>, then a suffix), so that `tensorboard
// --logdir DIR` finds it and a resumed run adds a file beside the first.
// Every event is a TFRecord (TfRecord.h) flushed as written: a crash loses
// at most the event being written.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_OBSERVABILITY_EVENTFILEWRITER_H
#define SNN_RUNTIME_OBSERVABILITY_EVENTFILEWRITER_H

#include "snn/Runtime/Observability/TensorBoardEvent.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace snn::runtime {

/// "events.out.tfevents.0001733360000.host.1234.0.spikemesh".
std::string eventFileName(int64_t seconds, const std::string &host, int64_t pid);

class EventFileWriter {
public:
  /// Creates `dir` if missing and a new event file in it holding the
  /// file_version event. Throws Error naming --tensorboard on failure.
  explicit EventFileWriter(const std::string &dir);

  const std::string &path() const { return filePath; }

  /// One Event with `scalars` at `step`, flushed.
  void write(int64_t step, const std::vector<Scalar> &scalars);

private:
  void append(const std::string &event);

  struct Closer {
    void operator()(std::FILE *f) const { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, Closer> file;
  std::string filePath;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_OBSERVABILITY_EVENTFILEWRITER_H
