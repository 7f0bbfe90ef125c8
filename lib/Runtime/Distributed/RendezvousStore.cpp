//===- RendezvousStore.cpp - Job secret, memory store, wire, client -------===//
//
// See RendezvousStore.h. The server is in StoreServer.cpp.
//
//===----------------------------------------------------------------------===//

#include "RendezvousStore.h"
#include "snn/Runtime/Distributed/Error.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sstream>
#include <sys/socket.h>
#include <unistd.h>

namespace snn::dist::detail {

using Clock = std::chrono::steady_clock;

static std::string seconds(std::chrono::milliseconds duration) {
  std::ostringstream out;
  out << duration.count() / 1000.0 << " s";
  return out.str();
}

std::chrono::milliseconds
launcherAnswerTimeout(std::chrono::milliseconds timeout) {
  return std::clamp(timeout, kLauncherAnswerMin,
                    std::chrono::milliseconds(30000));
}

//===----------------------------------------------------------------------===//
// The job secret
//===----------------------------------------------------------------------===//

std::string newJobSecret() {
  unsigned char bytes[32];
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  size_t have = 0;
  while (fd >= 0 && have < sizeof bytes) {
    ssize_t n = ::read(fd, bytes + have, sizeof bytes - have);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    have += static_cast<size_t>(n);
  }
  if (fd >= 0)
    ::close(fd);
  if (have < sizeof bytes)
    throw DistributedError("cannot read 32 random bytes from /dev/urandom for "
                           "the job secret of the rendezvous store");
  static const char *kDigits = "0123456789abcdef";
  std::string secret;
  for (unsigned char byte : bytes) {
    secret += kDigits[byte >> 4];
    secret += kDigits[byte & 15];
  }
  return secret;
}

bool validJobSecret(const std::string &secret) {
  return secret.size() == 64 &&
         secret.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos;
}

bool constantTimeEquals(const std::string &a, const std::string &b) {
  // Every byte is looked at: the time says nothing about the first mismatch.
  unsigned char difference = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? a[i] : 0;
    unsigned char y = i < b.size() ? b[i] : 0;
    difference |= x ^ y;
  }
  return difference == 0;
}

//===----------------------------------------------------------------------===//
// MemoryStore
//===----------------------------------------------------------------------===//

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
    throw DistributedError("store wait timed out after " + seconds(timeout));
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

//===----------------------------------------------------------------------===//
// Wire format
//===----------------------------------------------------------------------===//

namespace wire {

static void putU32(std::string &out, uint32_t value) {
  uint32_t network = htonl(value);
  out.append(reinterpret_cast<const char *>(&network), 4);
}

static bool getU32(const std::string &in, size_t &at, uint32_t &value) {
  if (in.size() - at < 4)
    return false;
  uint32_t network;
  std::memcpy(&network, in.data() + at, 4);
  value = ntohl(network);
  at += 4;
  return true;
}

std::string encode(uint8_t code, const std::vector<std::string> &items) {
  std::string body(1, static_cast<char>(code));
  putU32(body, static_cast<uint32_t>(items.size()));
  for (const std::string &item : items) {
    putU32(body, static_cast<uint32_t>(item.size()));
    body += item;
  }
  std::string message;
  putU32(message, static_cast<uint32_t>(body.size()));
  return message + body;
}

bool decode(const std::string &body, uint8_t &code,
            std::vector<std::string> &items) {
  size_t at = 1;
  uint32_t count = 0;
  if (body.empty() || !getU32(body, at, count) || count > kMaxItems)
    return false;
  code = static_cast<uint8_t>(body[0]);
  items.clear();
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t size = 0;
    if (!getU32(body, at, size) || body.size() - at < size)
      return false;
    items.push_back(body.substr(at, size));
    at += size;
  }
  return at == body.size();
}

bool sendAll(int fd, const std::string &data) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

bool receiveExactly(int fd, size_t size, std::string &out) {
  out.assign(size, '\0');
  size_t have = 0;
  while (have < size) {
    ssize_t n = ::recv(fd, &out[have], size - have, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    have += static_cast<size_t>(n);
  }
  return true;
}

bool receiveMessage(int fd, std::string &body) {
  std::string header;
  if (!receiveExactly(fd, 4, header))
    return false;
  size_t at = 0;
  uint32_t size = 0;
  getU32(header, at, size);
  return size >= 5 && size <= kMaxMessage && receiveExactly(fd, size, body);
}

void setTimeouts(int fd, std::chrono::milliseconds timeout) {
  struct timeval value {};
  value.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  value.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &value, sizeof value);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &value, sizeof value);
}

} // namespace wire

//===----------------------------------------------------------------------===//
// StoreClient
//===----------------------------------------------------------------------===//

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
                             " did not answer within " + seconds(timeout));
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
        (timedOut ? " did not answer within " + seconds(answerWithin)
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
