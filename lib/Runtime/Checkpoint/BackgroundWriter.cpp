//===- BackgroundWriter.cpp - One checkpoint write at a time --------------===//

#include "snn/Runtime/Checkpoint/BackgroundWriter.h"

#include <stdexcept>

namespace snn::runtime {

namespace {

/// What `job` threw, empty when it returned.
std::string runCatching(const std::function<void()> &job) {
  try {
    job();
    return {};
  } catch (const std::exception &e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

} // namespace

BackgroundWriter::BackgroundWriter(bool background) : threaded(background) {}

BackgroundWriter::~BackgroundWriter() {
  if (worker.joinable())
    worker.join();
}

void BackgroundWriter::start(std::function<void()> job) {
  if (hasJob)
    throw std::logic_error("BackgroundWriter::start: the previous job's result was not taken");
  hasJob = true;
  finished = false;
  error.clear();
  if (!threaded) {
    error = runCatching(job);
    finished = true;
    return;
  }
  // The thread writes `error` before it sets `finished`; wait() reads it after join().
  worker = std::thread([this, job = std::move(job)] {
    error = runCatching(job);
    finished = true;
  });
}

std::string BackgroundWriter::wait() {
  if (!hasJob)
    return {};
  if (worker.joinable())
    worker.join();
  hasJob = false;
  return std::move(error);
}

} // namespace snn::runtime
