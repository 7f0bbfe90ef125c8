//===- LrSchedule.cpp - Learning rate per optimizer step ------------------===//
//
// The expressions keep the reference trainer's evaluation order (Python
// floats are doubles), so both trainers use the same learning rate bits.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Optim/LrSchedule.h"

#include <cmath>

namespace snn::runtime {

namespace {
constexpr double kPi = 3.141592653589793; // Python's math.pi
} // namespace

double LrSchedule::at(int64_t step) const {
  switch (kind) {
  case ScheduleKind::Constant:
    return lr;
  case ScheduleKind::Step:
    return lr * std::pow(gamma, double(step / stepSize));
  case ScheduleKind::Cosine:
    return etaMin +
           (lr - etaMin) *
               (1.0 + std::cos(kPi * double(step) / double(totalSteps))) / 2.0;
  }
  return lr;
}

} // namespace snn::runtime
