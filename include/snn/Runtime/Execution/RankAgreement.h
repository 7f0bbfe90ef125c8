//===- RankAgreement.h - The ranks agree before the first collective -*- C++ -*-===//
//
// A run whose ranks load programs of their own (tp, fsdp_tp, pp) would
// otherwise find out that the programs disagree only inside a collective: a
// message of the wrong size aborts Gloo's transport thread, a program copied
// from another rank runs to the end with wrong outputs. At start-up each rank
// checks its programs' mesh coordinates (ProgramCoordinate.h), then the ranks
// all-gather their communication fingerprints (CommunicationFingerprint.h)
// and every rank refuses with the same line when they differ.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_RANKAGREEMENT_H
#define SNN_RUNTIME_EXECUTION_RANKAGREEMENT_H

#include "snn/Runtime/Distributed/World.h"
#include "snn/Runtime/Execution/Artifact.h"

namespace snn::runtime {

/// Collective over the world (every rank calls it after loading, before any
/// other collective); nothing to do for an artifact whose ranks all run one
/// program. Throws Error naming the rank and the first difference.
void checkRanksAgree(const Artifact &artifact, const dist::World &world);

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_RANKAGREEMENT_H
