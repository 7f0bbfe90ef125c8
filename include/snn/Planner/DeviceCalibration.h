//===- DeviceCalibration.h - A device profile as the cost model's machine -*- C++ -*-===//
//
// The bridge from the file format (schema::DeviceProfile, written by
// `snn-run calibrate`) to the planner's Calibration: compute curves by kind of
// work, collective curves by kind and group size.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_PLANNER_DEVICECALIBRATION_H
#define SNN_PLANNER_DEVICECALIBRATION_H

#include "snn/Planner/Calibration.h"
#include "snn/Schema/DeviceProfile.h"

#include <memory>
#include <string>

namespace snn::planner {

/// `profile` (already validated by its reader) as a Calibration; `path` names it in the
/// rationale with the machine and threads it was measured with.
std::shared_ptr<const Calibration> calibrationFromProfile(const schema::DeviceProfile &profile,
                                                          const std::string &path);

/// Where the plan's times come from, for the manifest's `plan.prediction.times`: the
/// profile (and whether it measured this model's step), or "default constants".
std::string timesSource(const Hardware &hardware, const ModelInfo &model);

} // namespace snn::planner

#endif // SNN_PLANNER_DEVICECALIBRATION_H
