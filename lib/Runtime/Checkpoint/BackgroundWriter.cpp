//===- BackgroundWriter.cpp - One checkpoint write at a time --------------===//

#include "snn/Runtime/Checkpoint/BackgroundWriter.h"

#include <algorithm>
#include <cerrno>
#include <stdexcept>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

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

/// Lowers the calling thread's priority (nice +10, best effort): the writer
/// yields the cores to the training threads and runs in their gaps; if it
/// has not finished by the next save point, the training thread waits and
/// the writer has the cores to itself.
void yieldToTraining() {
  pid_t thread = pid_t(::syscall(SYS_gettid));
  errno = 0;
  int nice = ::getpriority(PRIO_PROCESS, id_t(thread));
  if (errno == 0)
    ::setpriority(PRIO_PROCESS, id_t(thread), std::min(nice + 10, 19));
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
    yieldToTraining();
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
