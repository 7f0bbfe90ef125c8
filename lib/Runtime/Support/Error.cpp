//===- Error.cpp - One-line error reports ---------------------------------===//

#include "snn/Runtime/Support/Error.h"

#include <iostream>

namespace snn::runtime {

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
