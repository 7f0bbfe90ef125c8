//===- StoreServer.cpp - The launcher's authenticated store listener ------===//
//
// See StoreServer.h. One thread accepts; one thread per connection
// reads the secret, then requests, and answers them from the MemoryStore.
// A thread per connection keeps a blocking wait (the server side of
// Store::wait) from holding up the other ranks.
//
//===----------------------------------------------------------------------===//

#include "StoreServer.h"
#include "JobSecret.h"
#include "StoreWire.h"
#include "snn/Runtime/Distributed/Error.h"

#include <cerrno>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace snn::dist::detail {

namespace {

// A client that connects must send the secret at once; a silent one is
// closed after this, so it cannot hold a thread.
constexpr std::chrono::milliseconds kHandshakeTimeout{5000};
// Connections still in the handshake at one time; more are closed at once
// (a flood from the network cannot exhaust threads).
constexpr int kMaxHandshaking = 64;

std::vector<uint8_t> toBytes(const std::string &text) {
  return std::vector<uint8_t>(text.begin(), text.end());
}
std::string toText(const std::vector<uint8_t> &bytes) {
  return std::string(bytes.begin(), bytes.end());
}

// One request against the store; the reply's items.
std::vector<std::string> dispatch(MemoryStore &store, uint8_t op,
                                  const std::vector<std::string> &items) {
  auto need = [&](size_t n) {
    if (items.size() < n)
      throw DistributedError("malformed request");
  };
  switch (op) {
  case wire::kSet:
    need(2);
    store.set(items[0], toBytes(items[1]));
    return {};
  case wire::kCompareSet:
    need(3);
    return {toText(store.compareSet(items[0], toBytes(items[1]),
                                    toBytes(items[2])))};
  case wire::kGet:
    need(1);
    if (!store.check({items[0]}))
      throw DistributedError("key '" + items[0] + "' not found");
    return {toText(store.get(items[0]))};
  case wire::kAdd:
    need(2);
    return {std::to_string(store.add(items[0], std::stoll(items[1])))};
  case wire::kDelete:
    need(1);
    return {store.deleteKey(items[0]) ? "1" : "0"};
  case wire::kCheck:
    return {store.check(items) ? "1" : "0"};
  case wire::kNumKeys:
    return {std::to_string(store.getNumKeys())};
  case wire::kWait: {
    need(1);
    std::vector<std::string> keys(items.begin() + 1, items.end());
    store.wait(keys, std::chrono::milliseconds(std::stoll(items[0])));
    return {};
  }
  case wire::kPing:
    return {};
  default:
    throw DistributedError("unknown request " + std::to_string(op));
  }
}

// A listening socket on address:port; throws with the reason.
int listenOn(const std::string &address, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo *found = nullptr;
  int status = ::getaddrinfo(address.c_str(), std::to_string(port).c_str(),
                             &hints, &found);
  if (status != 0)
    throw DistributedError("cannot resolve '" + address +
                           "': " + ::gai_strerror(status));
  int fd = -1;
  std::string error = "no address";
  for (addrinfo *a = found; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      error = std::strerror(errno);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 1024) != 0) {
      error = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0)
    throw DistributedError("cannot listen on " + address + ":" +
                           std::to_string(port) + ": " + error);
  return fd;
}

int boundPort(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length);
  if (address.ss_family == AF_INET6)
    return ntohs(reinterpret_cast<sockaddr_in6 *>(&address)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in *>(&address)->sin_port);
}

} // namespace

StoreServer::StoreServer(const std::string &address, int port,
                         std::string secret,
                         c10::intrusive_ptr<MemoryStore> store)
    : secret_(std::move(secret)), store_(std::move(store)) {
  if (!validJobSecret(secret_))
    throw DistributedError("the rendezvous store needs a 64-digit hex secret");
  listenFd_ = listenOn(address, port);
  port_ = boundPort(listenFd_);
}

void StoreServer::start() {
  if (!acceptThread_.joinable())
    acceptThread_ = std::thread([this] { acceptLoop(); });
}

StoreServer::~StoreServer() {
  stopping_ = true;
  // shutdown() wakes the blocked accept() and every blocked recv().
  ::shutdown(listenFd_, SHUT_RDWR);
  if (acceptThread_.joinable())
    acceptThread_.join();
  ::close(listenFd_);
  store_->close(); // wakes connections blocked in a wait
  std::lock_guard<std::mutex> lock(connectionsMutex_);
  for (Connection &connection : connections_)
    if (connection.fd >= 0)
      ::shutdown(connection.fd, SHUT_RDWR);
  for (Connection &connection : connections_) {
    if (connection.thread.joinable())
      connection.thread.join();
    if (connection.fd >= 0)
      ::close(connection.fd);
  }
}

void StoreServer::joinFinished() {
  std::lock_guard<std::mutex> lock(connectionsMutex_);
  for (auto it = connections_.begin(); it != connections_.end();) {
    if (!it->done) {
      ++it;
      continue;
    }
    it->thread.join();
    if (it->fd >= 0)
      ::close(it->fd);
    it = connections_.erase(it);
  }
}

void StoreServer::acceptLoop() {
  while (!stopping_) {
    int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE ||
          errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        if (errno != EINTR && errno != ECONNABORTED)
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      return; // shut down
    }
    joinFinished();
    if (handshaking_ >= kMaxHandshaking) {
      ++refused_;
      ::close(fd);
      continue;
    }
    ++handshaking_;
    std::lock_guard<std::mutex> lock(connectionsMutex_);
    Connection &connection = connections_.emplace_back();
    connection.fd = fd;
    connection.thread = std::thread([this, &connection] { serve(connection); });
  }
}

bool StoreServer::handshake(int fd) {
  wire::setTimeouts(fd, kHandshakeTimeout);
  const std::string hello = wire::kHello;
  std::string received;
  bool ok = wire::receiveExactly(fd, hello.size() + secret_.size(), received) &&
            constantTimeEquals(received, hello + secret_);
  --handshaking_;
  if (!ok) {
    ++refused_;
    return false;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // Authenticated ranks may stay idle between requests for any time.
  wire::setTimeouts(fd, std::chrono::milliseconds(0));
  return wire::sendAll(fd, "K");
}

void StoreServer::serve(Connection &connection) {
  const int fd = connection.fd;
  if (handshake(fd)) {
    std::string body;
    while (!stopping_ && wire::receiveMessage(fd, body)) {
      uint8_t op = 0;
      std::vector<std::string> items;
      if (!wire::decode(body, op, items))
        break; // not our protocol: drop the connection
      std::string reply;
      try {
        reply = wire::encode(wire::kOk, dispatch(*store_, op, items));
      } catch (const std::exception &e) {
        reply = wire::encode(wire::kError, {describeException(e)});
      }
      if (!wire::sendAll(fd, reply))
        break;
    }
  }
  // The fd stays open until joinFinished or the destructor closes it, so
  // its number cannot be reused while the destructor may shut it down.
  ::shutdown(fd, SHUT_RDWR);
  connection.done = true;
}

} // namespace snn::dist::detail
