//===- CollectiveOpsCheck.h - The "ops" scenario of snn-dist-check -*- C++ -*-===//
#ifndef SNN_TEST_DISTRIBUTED_COLLECTIVEOPSCHECK_H
#define SNN_TEST_DISTRIBUTED_COLLECTIVEOPSCHECK_H

#include "snn/Runtime/Distributed/World.h"

namespace snn::distcheck {

/// The runtime's collective op kernels over a MeshContext of `world` ([n] on
/// axis tp; [2, 2] on axes dp, tp for four ranks); throws DistributedError
/// naming the first failed check.
void checkCollectiveOps(dist::World &world);

} // namespace snn::distcheck

#endif // SNN_TEST_DISTRIBUTED_COLLECTIVEOPSCHECK_H
