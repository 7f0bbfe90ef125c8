//===- EventFileWriter.cpp - A TensorBoard event file ---------------------===//

#include "snn/Runtime/Observability/EventFileWriter.h"
#include "snn/Runtime/Observability/TfRecord.h"
#include "snn/Runtime/Support/Error.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <unistd.h>

namespace snn::runtime {

namespace {

double wallTime() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string hostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0')
    return "localhost";
  return name;
}

} // namespace

std::string eventFileName(int64_t seconds, const std::string &host, int64_t pid) {
  // TensorBoard's writers: "events.out.tfevents.%010d.%s.%s.%s" of (time,
  // host, pid, the writer's number in the process), then a suffix.
  char secs[32];
  std::snprintf(secs, sizeof(secs), "%010lld", static_cast<long long>(seconds));
  return std::string("events.out.tfevents.") + secs + "." + host + "." +
         std::to_string(pid) + ".0.spikemesh";
}

EventFileWriter::EventFileWriter(const std::string &dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error)
    throw Error("--tensorboard " + dir + ": cannot create: " + error.message());
  double now = wallTime();
  filePath = (std::filesystem::path(dir) /
              eventFileName(int64_t(now), hostName(), int64_t(::getpid())))
                 .string();
  // "x": never append to or replace another writer's file.
  file.reset(std::fopen(filePath.c_str(), "wbx"));
  if (!file)
    throw Error("--tensorboard " + filePath + ": cannot create: " +
                std::strerror(errno));
  append(fileVersionEvent(now));
}

void EventFileWriter::append(const std::string &event) {
  std::string record = tfRecord(event);
  if (std::fwrite(record.data(), 1, record.size(), file.get()) != record.size() ||
      std::fflush(file.get()) != 0)
    throw Error("--tensorboard " + filePath + ": write failed: " +
                std::strerror(errno));
}

void EventFileWriter::write(int64_t step, const std::vector<Scalar> &scalars) {
  append(scalarsEvent(wallTime(), step, scalars));
}

} // namespace snn::runtime
