//===- JobSecret.cpp - The secret of a launcher's job ---------------------===//
//
// See JobSecret.h.
//
//===----------------------------------------------------------------------===//

#include "JobSecret.h"
#include "snn/Runtime/Distributed/Error.h"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

namespace snn::dist::detail {

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

} // namespace snn::dist::detail
