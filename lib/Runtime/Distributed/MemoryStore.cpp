//===- MemoryStore.cpp - The rendezvous store's keys in memory ------------===//
//
// See MemoryStore.h. StoreServer.cpp answers the ranks' requests from it.
//
//===----------------------------------------------------------------------===//

#include "MemoryStore.h"
#include "Text.h"
#include "snn/Runtime/Distributed/Error.h"

#include <cerrno>
#include <cstdlib>

namespace snn::dist::detail {

MemoryStore::MemoryStore(std::chrono::milliseconds timeout) : Store(timeout) {}

bool MemoryStore::hasAll(const std::vector<std::string> &keys) const {
  for (const std::string &key : keys)
    if (!values_.count(key))
      return false;
  return true;
}

void MemoryStore::set(const std::string &key, const std::vector<uint8_t> &value) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    values_[key] = value;
  }
  changed_.notify_all();
}

// TCPStore's semantics (torch 1.13): a missing key is created only when
// `expected` is empty; the reply is the value now stored (or `expected`).
std::vector<uint8_t> MemoryStore::compareSet(const std::string &key,
                                             const std::vector<uint8_t> &expected,
                                             const std::vector<uint8_t> &desired) {
  std::vector<uint8_t> result;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = values_.find(key);
    if (found == values_.end()) {
      if (!expected.empty())
        return expected;
      result = values_[key] = desired;
    } else {
      if (found->second == expected)
        found->second = desired;
      result = found->second;
    }
  }
  changed_.notify_all();
  return result;
}

std::vector<uint8_t> MemoryStore::get(const std::string &key) {
  wait({key}, timeout_);
  std::lock_guard<std::mutex> lock(mutex_);
  return values_.at(key);
}

int64_t MemoryStore::add(const std::string &key, int64_t value) {
  int64_t sum = value;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = values_.find(key);
    if (found != values_.end()) {
      std::string text(found->second.begin(), found->second.end());
      char *end = nullptr;
      errno = 0;
      long long current = std::strtoll(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0' || errno == ERANGE)
        throw DistributedError("store key '" + key + "' is not a counter");
      sum = static_cast<int64_t>(current) + value;
    }
    std::string text = std::to_string(sum);
    values_[key] = std::vector<uint8_t>(text.begin(), text.end());
  }
  changed_.notify_all();
  return sum;
}

bool MemoryStore::deleteKey(const std::string &key) {
  std::lock_guard<std::mutex> lock(mutex_);
  return values_.erase(key) > 0;
}

bool MemoryStore::check(const std::vector<std::string> &keys) {
  std::lock_guard<std::mutex> lock(mutex_);
  return hasAll(keys);
}

int64_t MemoryStore::getNumKeys() {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(values_.size());
}

void MemoryStore::wait(const std::vector<std::string> &keys) {
  wait(keys, timeout_);
}

void MemoryStore::wait(const std::vector<std::string> &keys,
                       const std::chrono::milliseconds &timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto ready = [&] { return closed_ || hasAll(keys); };
  if (timeout == kNoTimeout)
    changed_.wait(lock, ready);
  else if (!changed_.wait_for(lock, timeout, ready))
    throw DistributedError("store wait timed out after " + secondsText(timeout));
  if (closed_)
    throw DistributedError("the rendezvous store is shutting down");
}

void MemoryStore::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
  }
  changed_.notify_all();
}

} // namespace snn::dist::detail
