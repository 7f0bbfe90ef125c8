//===- StoreWire.h - The rendezvous store's wire format (private) -*- C++ -*-===//
//
// Both directions: u32 length (network order) of the rest, u8 code, u32 item count, then
// per item u32 length + bytes. Requests carry an operation code; replies 0 (ok) or 1
// (error, item 0 the message). The handshake before it: "SNNRDV1 " + the job secret's 64
// hex digits (JobSecret.h); the server answers 'K' or closes the connection.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_LIB_RUNTIME_DISTRIBUTED_STOREWIRE_H
#define SNN_LIB_RUNTIME_DISTRIBUTED_STOREWIRE_H

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace snn::dist::detail {

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

} // namespace snn::dist::detail

#endif // SNN_LIB_RUNTIME_DISTRIBUTED_STOREWIRE_H
