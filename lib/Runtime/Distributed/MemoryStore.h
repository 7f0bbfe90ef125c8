//===- MemoryStore.h - The rendezvous store's keys in memory (private) -*- C++ -*-===//
//
// The launcher's store (StoreServer.h) keeps its keys here: a c10d::Store, so the launcher
// reads them directly after supervision; semantics as TCPStore's (torch 1.13).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_LIB_RUNTIME_DISTRIBUTED_MEMORYSTORE_H
#define SNN_LIB_RUNTIME_DISTRIBUTED_MEMORYSTORE_H

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace snn::dist::detail {

/// The store's keys in memory; thread-safe. get and wait block until the
/// keys exist (or the timeout passes, or close() is called).
class MemoryStore : public c10d::Store {
public:
  explicit MemoryStore(std::chrono::milliseconds timeout);

  void set(const std::string &key, const std::vector<uint8_t> &value) override;
  std::vector<uint8_t> compareSet(const std::string &key,
                                  const std::vector<uint8_t> &expected,
                                  const std::vector<uint8_t> &desired) override;
  std::vector<uint8_t> get(const std::string &key) override;
  int64_t add(const std::string &key, int64_t value) override;
  bool deleteKey(const std::string &key) override;
  bool check(const std::vector<std::string> &keys) override;
  int64_t getNumKeys() override;
  void wait(const std::vector<std::string> &keys) override;
  void wait(const std::vector<std::string> &keys,
            const std::chrono::milliseconds &timeout) override;

  /// Wakes every waiter with an error; later waits fail at once.
  void close();

private:
  bool hasAll(const std::vector<std::string> &keys) const;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::vector<uint8_t>> values_;
  bool closed_ = false;
};

} // namespace snn::dist::detail

#endif // SNN_LIB_RUNTIME_DISTRIBUTED_MEMORYSTORE_H
