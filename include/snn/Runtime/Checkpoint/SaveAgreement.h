//===- SaveAgreement.h - Every rank learns why a save failed ----*- C++ -*-===//
//
// A checkpoint that several ranks write is published only when all of them
// succeeded, and a run must not leave one rank training while another
// stopped: after each part of a collective save the ranks exchange their
// errors, and all throw the same one.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_CHECKPOINT_SAVEAGREEMENT_H
#define SNN_RUNTIME_CHECKPOINT_SAVEAGREEMENT_H

#include "snn/Runtime/Distributed/Group.h"

#include <string>

namespace snn::runtime {

/// Collective over `group`: every member passes its own error (empty: none).
/// If any member has one, every member throws the same Error: the cause of
/// the lowest such rank, as "rank R: cause" in a group of several ranks
/// (causes are cut to 500 bytes).
void agreeAcrossRanks(const dist::Group &group, const std::string &error);

} // namespace snn::runtime

#endif // SNN_RUNTIME_CHECKPOINT_SAVEAGREEMENT_H
