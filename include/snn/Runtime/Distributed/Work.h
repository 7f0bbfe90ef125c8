//===- Work.h - What waiting on collectives costs ---------------*- C++ -*-===//
//
// Every wait on a collective's or a transfer's work (Collectives.h,
// PointToPoint.h) is bounded by its group's timeout and counted here.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_DISTRIBUTED_WORK_H
#define SNN_RUNTIME_DISTRIBUTED_WORK_H

namespace snn::dist {

/// Wall seconds this process has spent waiting for its collectives and
/// point-to-point transfers to complete since it started: the communication
/// its computation did not hide. A step's share is the difference across it.
double blockedSeconds();

} // namespace snn::dist

#endif // SNN_RUNTIME_DISTRIBUTED_WORK_H
