//===- StoreServer.h - The launcher's authenticated store (private) -*- C++ -*-===//
//
// `snn-run --nproc N` hosts the job's rendezvous store. c10d's TCPStore (torch
// 1.13) listens on every interface and has no authentication, so anyone who
// reaches the port can read and write the keys the launcher trusts
// (snn/failed/<rank>, snn/suspects/<rank>: FailureAttribution.cpp). The
// launcher therefore serves a store of its own:
//
//   MemoryStore  the keys, in the launcher's memory (a c10d::Store, so the
//                launcher reads them directly after supervision;
//                MemoryStore.h)
//   StoreServer  a TCP listener on one address (127.0.0.1 unless
//                --master-addr says otherwise); every connection first sends
//                the per-job secret (JobSecret.h), and is closed unless it
//                matches
//   StoreClient  a c10d::Store for the ranks (c10d and ProcessGroupGloo use
//                it like a TCPStore), speaking to StoreServer (StoreClient.h)
//
// The two ends speak the wire format of StoreWire.h.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_LIB_RUNTIME_DISTRIBUTED_STORESERVER_H
#define SNN_LIB_RUNTIME_DISTRIBUTED_STORESERVER_H

#include "MemoryStore.h"

#include <atomic>
#include <list>
#include <mutex>
#include <string>
#include <thread>

namespace snn::dist::detail {

/// The launcher's listener in front of a MemoryStore (see the file comment).
/// Each connection has its own thread; a connection that does not complete
/// the handshake within kHandshakeTimeout, or sends another secret, is
/// closed and the server keeps serving the others.
class StoreServer {
public:
  /// Binds `address` (a host name or IP literal) on `port` (0: any free one) and listens;
  /// connections wait until start(). Throws DistributedError when it cannot.
  StoreServer(const std::string &address, int port, std::string secret,
              c10::intrusive_ptr<MemoryStore> store);
  ~StoreServer();
  StoreServer(const StoreServer &) = delete;
  StoreServer &operator=(const StoreServer &) = delete;

  int port() const { return port_; }
  /// Starts answering (its threads); idempotent. Apart from the constructor, so that the
  /// launcher can fork its ranks while it has one thread.
  void start();
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

} // namespace snn::dist::detail

#endif // SNN_LIB_RUNTIME_DISTRIBUTED_STORESERVER_H
