//===- CpuSharing.h - Ranks sharing a machine's CPUs (internal) -*- C++ -*-===//
//
// What Estimator::estimate() adds when a job's ranks share the calibrated machine's CPUs;
// each function's measured reasons are beside its definition (CpuSharing.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_LIB_PLANNER_CPUSHARING_H
#define SNN_LIB_PLANNER_CPUSHARING_H

#include "snn/Planner/Calibration.h"
#include "snn/Planner/Estimate.h"

#include <cstdint>

namespace snn::planner {

/// The ranks of `e`'s job: dp x tp x pp.
int64_t jobRanksOf(const Estimate &e);
/// The factor compute slows by with `full` = ranks x threads / CPUs: `full` for flat modes
/// (lockstep); for pipelines the expected slowdown at the ranks' independent busy shares.
double cpuContention(const Estimate &e, double full);
/// The seconds compute waits beyond the estimate because the CPUs cannot run the step's
/// busySeconds faster (plus a pipeline's drain synchronisation), or 0.
double cpuThroughputWait(const Estimate &e, const Calibration &calibration);
/// The chance that a rank ready to run finds the CPUs taken by the job's other ranks.
double peerDelayChance(const Estimate &e, const Calibration &calibration);

} // namespace snn::planner

#endif // SNN_LIB_PLANNER_CPUSHARING_H
