//===- StoreClient.h - A rank's connection to the launcher's store (private) -*- C++ -*-===//
//
// A c10d::Store for the ranks of `snn-run --nproc`: c10d and ProcessGroupGloo use it like
// a TCPStore. It speaks the wire format (StoreWire.h) to StoreServer, after sending the
// job's secret (JobSecret.h).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_LIB_RUNTIME_DISTRIBUTED_STORECLIENT_H
#define SNN_LIB_RUNTIME_DISTRIBUTED_STORECLIENT_H

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace snn::dist::detail {

/// A rank's connection to StoreServer. Every operation is bounded: the
/// store's timeout for an answer (plus the wait itself for wait/get).
class StoreClient : public c10d::Store {
public:
  /// Connects (retrying refused connections until `timeout`) and sends the
  /// secret. Throws DistributedError naming host:port when it cannot, or
  /// when the server refuses the secret.
  StoreClient(const std::string &host, int port, const std::string &secret,
              std::chrono::milliseconds timeout);
  ~StoreClient() override;

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

  /// A round trip that must complete within `within`; throws otherwise.
  void ping(std::chrono::milliseconds within);

private:
  std::vector<std::string> call(uint8_t op, const std::vector<std::string> &items,
                                std::chrono::milliseconds answerWithin);

  std::mutex mutex_;
  int fd_ = -1;
  std::string where_;
};

} // namespace snn::dist::detail

#endif // SNN_LIB_RUNTIME_DISTRIBUTED_STORECLIENT_H
