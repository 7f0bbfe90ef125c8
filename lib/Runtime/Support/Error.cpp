//===- Error.cpp - One-line error reports ---------------------------------===//

#include "snn/Runtime/Support/Error.h"

#include <c10/util/Exception.h>

#include <iostream>

namespace snn::runtime {

static std::string firstLine(std::string text) {
  size_t end = text.find('\n');
  if (end != std::string::npos)
    text.resize(end);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\r'))
    text.pop_back();
  return text;
}

// Gloo prefixes its messages with a source location:
// "[./gloo/transport/tcp/pair.cc:598] Connection closed by peer ...".
static std::string dropSourceLocation(std::string text) {
  if (text.size() > 2 && text[0] == '[') {
    size_t close = text.find("] ");
    if (close != std::string::npos) {
      std::string inside = text.substr(1, close - 1);
      size_t colon = inside.rfind(':');
      bool looksLikeLocation =
          colon != std::string::npos && colon + 1 < inside.size() &&
          inside.find_first_not_of("0123456789", colon + 1) ==
              std::string::npos &&
          (inside.find(".cc") != std::string::npos ||
           inside.find(".cpp") != std::string::npos ||
           inside.find(".h") != std::string::npos);
      if (looksLikeLocation)
        text = text.substr(close + 2);
    }
  }
  return text;
}

std::string describeException(const std::exception &e) {
  std::string text;
  if (auto *c10Error = dynamic_cast<const c10::Error *>(&e))
    text = c10Error->what_without_backtrace();
  else
    text = e.what();
  text = dropSourceLocation(firstLine(std::move(text)));
  return text.empty() ? "unknown failure" : text;
}

int runReportingErrors(const std::function<int()> &body) {
  try {
    return body();
  } catch (const std::exception &e) {
    std::cerr << ("error: " + describeException(e) + "\n") << std::flush;
  } catch (...) {
    std::cerr << "error: unknown failure" << std::endl;
  }
  return 1;
}

} // namespace snn::runtime
