//===- RendezvousStore.h - The launcher's authenticated store (private) ---===//
//
// `snn-run --nproc N` hosts the job's rendezvous store. c10d's TCPStore (torch
// 1.13) listens on every interface and has no authentication, so anyone who
// reaches the port can read and write the keys the launcher trusts
// (snn/failed/<rank>, snn/suspects/<rank>: FailureAttribution.cpp). The
// launcher therefore serves a store of its own:
//
//   MemoryStore  the keys, in the launcher's memory (a c10d::Store, so the
//                launcher reads them directly after supervision)
//   StoreServer  a TCP listener on one address (127.0.0.1 unless
//                --master-addr says otherwise); every connection first sends
//                the per-job secret, and is closed unless it matches
//   StoreClient  a c10d::Store for the ranks (c10d and ProcessGroupGloo use
//                it like a TCPStore), speaking to StoreServer
//
// The secret (32 random bytes, 64 hex digits) reaches the ranks in their
// environment (kJobSecretVariable), never on a command line: /proc/<pid>/
// environ is readable by the job's user only, /proc/<pid>/cmdline by all.
//
// Wire format (both directions): u32 length (network order) of the rest,
// u8 code, u32 item count, then per item u32 length + bytes. Requests carry
// an operation code; replies 0 (ok) or 1 (error, item 0 the message).
// The handshake before it: "SNNRDV1 " + the 64 hex digits; the server
// answers 'K' or closes the connection.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_LIB_RUNTIME_DISTRIBUTED_RENDEZVOUSSTORE_H
#define SNN_LIB_RUNTIME_DISTRIBUTED_RENDEZVOUSSTORE_H

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <condition_variable>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace snn::dist::detail {

/// Environment variables the launcher sets for its ranks.
inline constexpr const char *kJobSecretVariable = "SNN_JOB_SECRET";
inline constexpr const char *kLauncherPidVariable = "SNN_LAUNCHER_PID";

/// How long a rank waits for its launcher to answer a ping before it gives
/// up on the job (LauncherWatch.cpp): the distributed timeout, kept within
/// kLauncherAnswerMin to 30 s (a stopped launcher must not leave ranks
/// running for a long --dist-timeout; a live one answers in microseconds).
inline constexpr std::chrono::milliseconds kLauncherAnswerMin{5000};
std::chrono::milliseconds launcherAnswerTimeout(std::chrono::milliseconds timeout);

/// 64 hex digits from /dev/urandom. Throws DistributedError without it.
std::string newJobSecret();
/// Exactly 64 lowercase or uppercase hex digits.
bool validJobSecret(const std::string &secret);
/// Equal strings, in a time that does not depend on where they differ.
bool constantTimeEquals(const std::string &a, const std::string &b);

/// The framing shared by StoreServer and StoreClient.
namespace wire {
enum Op : uint8_t {
  kSet = 1, kCompareSet, kGet, kAdd, kDelete, kCheck, kNumKeys, kWait, kPing
};
enum Status : uint8_t { kOk = 0, kError = 1 };
/// Bigger messages end the connection: nothing in a rendezvous (addresses,
/// counters, heartbeats) comes near it.
inline constexpr uint32_t kMaxMessage = 64u << 20;
inline constexpr uint32_t kMaxItems = 1u << 20;
inline constexpr const char *kHello = "SNNRDV1 ";

std::string encode(uint8_t code, const std::vector<std::string> &items);
/// False for a body that is not one well-formed message.
bool decode(const std::string &body, uint8_t &code,
            std::vector<std::string> &items);
/// False when the peer is gone (MSG_NOSIGNAL: no SIGPIPE).
bool sendAll(int fd, const std::string &data);
/// False on end of file, an error or the receive timeout.
bool receiveExactly(int fd, size_t size, std::string &out);
/// One length-prefixed message body; false also when over kMaxMessage.
bool receiveMessage(int fd, std::string &body);
/// SO_RCVTIMEO and SO_SNDTIMEO; zero: none.
void setTimeouts(int fd, std::chrono::milliseconds timeout);
} // namespace wire

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

/// The launcher's listener in front of a MemoryStore (see the file comment).
/// Each connection has its own thread; a connection that does not complete
/// the handshake within kHandshakeTimeout, or sends another secret, is
/// closed and the server keeps serving the others.
class StoreServer {
public:
  /// Binds `address` (a host name or IP literal) on `port` (0: any free one).
  /// Throws DistributedError when it cannot.
  StoreServer(const std::string &address, int port, std::string secret,
              c10::intrusive_ptr<MemoryStore> store);
  ~StoreServer();
  StoreServer(const StoreServer &) = delete;
  StoreServer &operator=(const StoreServer &) = delete;

  int port() const { return port_; }
  /// Connections closed for a missing or wrong secret so far.
  int refusedConnections() const { return refused_; }

private:
  struct Connection {
    int fd = -1;
    std::thread thread;
    std::atomic<bool> done{false};
  };
  void acceptLoop();
  void serve(Connection &connection);
  bool handshake(int fd);
  void joinFinished();

  std::string secret_;
  c10::intrusive_ptr<MemoryStore> store_;
  int listenFd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> refused_{0};
  std::atomic<int> handshaking_{0};
  std::thread acceptThread_;
  std::mutex connectionsMutex_;
  std::list<Connection> connections_;
};

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

#endif // SNN_LIB_RUNTIME_DISTRIBUTED_RENDEZVOUSSTORE_H
