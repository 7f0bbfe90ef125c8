//===- StoreClient.cpp - A rank's connection to the launcher's store ------===//
//
// See StoreClient.h. The server is in StoreServer.cpp.
//
//===----------------------------------------------------------------------===//

#include "StoreClient.h"
#include "JobSecret.h"
#include "StoreWire.h"
#include "Text.h"
#include "snn/Runtime/Distributed/Error.h"

#include <cerrno>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace snn::dist::detail {

using Clock = std::chrono::steady_clock;

// One connected socket to host:port, or -1 with `error` set.
static int connectOnce(const std::string &host, int port, std::string &error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo *found = nullptr;
  int status = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints,
                             &found);
  if (status != 0) {
    error = std::string("cannot resolve the host: ") + ::gai_strerror(status);
    return -1;
  }
  int fd = -1;
  for (addrinfo *a = found; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd >= 0 && ::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      error = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  return fd;
}

StoreClient::StoreClient(const std::string &host, int port,
                         const std::string &secret,
                         std::chrono::milliseconds timeout)
    : Store(timeout), where_(host + ":" + std::to_string(port)) {
  // The server is up before any rank starts; retrying only covers a
  // listener that is slow to accept under load.
  const auto deadline = Clock::now() + timeout;
  std::string error;
  while ((fd_ = connectOnce(host, port, error)) < 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (fd_ < 0)
    throw DistributedError("cannot connect to the rendezvous store at " +
                           where_ + ": " + error);
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  wire::setTimeouts(fd_, timeout);
  std::string answer;
  errno = 0;
  if (!wire::sendAll(fd_, wire::kHello + secret) ||
      !wire::receiveExactly(fd_, 1, answer) || answer != "K") {
    // A stopped server's kernel still accepts: silence is not a refusal.
    const bool timedOut = errno == EAGAIN || errno == EWOULDBLOCK;
    ::close(fd_);
    fd_ = -1;
    if (timedOut)
      throw DistributedError("the rendezvous store at " + where_ +
                             " did not answer within " + secondsText(timeout));
    throw DistributedError("the rendezvous store at " + where_ +
                           " refused this process's job secret (" +
                           kJobSecretVariable + " of another job?)");
  }
}

StoreClient::~StoreClient() {
  if (fd_ >= 0)
    ::close(fd_);
}

std::vector<std::string> StoreClient::call(uint8_t op,
                                           const std::vector<std::string> &items,
                                           std::chrono::milliseconds answerWithin) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ < 0)
    throw DistributedError("the rendezvous store at " + where_ +
                           " is no longer connected");
  wire::setTimeouts(fd_, answerWithin);
  std::string body;
  uint8_t status = 0;
  std::vector<std::string> reply;
  errno = 0;
  if (!wire::sendAll(fd_, wire::encode(op, items)) ||
      !wire::receiveMessage(fd_, body) || !wire::decode(body, status, reply)) {
    // A late answer would be read as the next call's: drop the connection.
    const bool timedOut = errno == EAGAIN || errno == EWOULDBLOCK;
    ::close(fd_);
    fd_ = -1;
    throw DistributedError(
        "the rendezvous store at " + where_ +
        (timedOut ? " did not answer within " + secondsText(answerWithin)
                  : std::string(" closed the connection")));
  }
  if (status != wire::kOk)
    throw DistributedError("rendezvous store: " +
                           (reply.empty() ? std::string("error") : reply[0]));
  return reply;
}

static std::string text(const std::vector<uint8_t> &bytes) {
  return std::string(bytes.begin(), bytes.end());
}
static std::vector<uint8_t> bytes(const std::string &text) {
  return std::vector<uint8_t>(text.begin(), text.end());
}

void StoreClient::set(const std::string &key, const std::vector<uint8_t> &value) {
  call(wire::kSet, {key, text(value)}, timeout_);
}

std::vector<uint8_t> StoreClient::compareSet(const std::string &key,
                                             const std::vector<uint8_t> &expected,
                                             const std::vector<uint8_t> &desired) {
  return bytes(call(wire::kCompareSet, {key, text(expected), text(desired)},
                    timeout_).at(0));
}

std::vector<uint8_t> StoreClient::get(const std::string &key) {
  // As TCPStore: wait for the key (the store's timeout), then read it.
  wait({key}, timeout_);
  return bytes(call(wire::kGet, {key}, timeout_).at(0));
}

int64_t StoreClient::add(const std::string &key, int64_t value) {
  return std::stoll(call(wire::kAdd, {key, std::to_string(value)}, timeout_).at(0));
}

bool StoreClient::deleteKey(const std::string &key) {
  return call(wire::kDelete, {key}, timeout_).at(0) == "1";
}

bool StoreClient::check(const std::vector<std::string> &keys) {
  return call(wire::kCheck, keys, timeout_).at(0) == "1";
}

int64_t StoreClient::getNumKeys() {
  return std::stoll(call(wire::kNumKeys, {}, timeout_).at(0));
}

void StoreClient::wait(const std::vector<std::string> &keys) {
  wait(keys, timeout_);
}

void StoreClient::wait(const std::vector<std::string> &keys,
                       const std::chrono::milliseconds &timeout) {
  // The server waits (item 0: milliseconds, 0 for none); the answer may
  // take that long, plus the store's usual bound.
  std::vector<std::string> items = {std::to_string(timeout.count())};
  items.insert(items.end(), keys.begin(), keys.end());
  auto within = timeout == kNoTimeout ? kNoTimeout : timeout + timeout_;
  call(wire::kWait, items, within);
}

void StoreClient::ping(std::chrono::milliseconds within) {
  call(wire::kPing, {}, within);
}

} // namespace snn::dist::detail
