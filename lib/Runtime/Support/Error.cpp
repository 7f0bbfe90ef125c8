//===- Error.cpp - One-line error reports ---------------------------------===//

#include "snn/Runtime/Support/Error.h"

#include <c10/util/Exception.h>

#include <iostream>

namespace snn::runtime {

// c10 messages can span lines (hints, backtraces); a tool prints one line.
static std::string firstLine(std::string text) {
  size_t end = text.find('\n');
  if (end != std::string::npos)
    text.resize(end);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\r'))
    text.pop_back();
  return text.empty() ? "unknown failure" : text;
}

std::string describeException(const std::exception &e) {
  if (auto *c10Error = dynamic_cast<const c10::Error *>(&e))
    return firstLine(c10Error->what_without_backtrace());
  return firstLine(e.what());
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
