//===- StoreWire.cpp - The rendezvous store's wire format -----------------===//
//
// See StoreWire.h: framing, and sockets that send and receive whole messages.
//
//===----------------------------------------------------------------------===//

#include "StoreWire.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <sys/socket.h>
#include <sys/time.h>

namespace snn::dist::detail {

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

} // namespace snn::dist::detail
