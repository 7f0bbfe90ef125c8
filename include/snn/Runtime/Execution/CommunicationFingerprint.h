//===- CommunicationFingerprint.h - What a rank will communicate -*- C++ -*-===//
//
// Before the first collective the ranks of a run with per-rank programs
// (tp, fsdp_tp, pp) compare what they will do (RankAgreement.h): each rank's
// fingerprint lists its programs' collectives in program order (op, mesh
// axis, the shape they communicate, N symbolic) and its pipeline sends and
// receives (stage, slot, peer stage, shape), every node of its programs (op,
// wiring, attributes: what the members of a tp group share, their split
// shapes aside), plus any problem the rank found with its own programs' mesh
// coordinates. findDisagreement is pure: it takes every rank's fingerprint
// and names the first difference.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_COMMUNICATIONFINGERPRINT_H
#define SNN_RUNTIME_EXECUTION_COMMUNICATIONFINGERPRINT_H

#include "snn/Runtime/Execution/Artifact.h"
#include "snn/Runtime/Execution/StaticShapes.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace snn::runtime {

/// One collective, send or recv node.
struct CommunicationStep {
  std::string op;       ///< all_reduce, all_gather, ..., send, recv
  std::string meshAxis; ///< a collective's group; "" for send and recv
  int64_t axis = -1;    ///< all_gather / all_slice: the dimension split
  int64_t stage = -1;   ///< the pipeline stage of its program (-1: none)
  int64_t slot = -1;    ///< send / recv
  int64_t peer = -1;    ///< send / recv: the other stage
  bool shapeKnown = false;
  StaticShape shape;    ///< what it communicates, when known
  std::string node;     ///< for messages
  std::string file;     ///< its program, for messages

  /// "all_reduce over 'tp' of [4, N, 16]" for messages.
  std::string describe() const;
};

/// One node of a rank's programs, as the members of a mesh axis' group
/// compare it: what it computes and from which values, not its tensors'
/// shapes (which a split changes).
struct ProgramNode {
  int64_t stage = -1;   ///< the pipeline stage of its program (-1: none)
  std::string node;     ///< its name
  std::string op;
  std::string wiring;   ///< "a, b -> c"
  /// Name and value as text, in name order.
  std::vector<std::pair<std::string, std::string>> attributes;
  std::string file;     ///< its program, for messages
};

struct CommunicationFingerprint {
  int rank = 0;
  /// What the rank found wrong with its own programs (coordinateProblem).
  std::string problem;
  /// The programs it runs (files) and their pipeline stages (-1: none).
  std::vector<std::string> files;
  std::vector<int64_t> stages;
  std::vector<CommunicationStep> steps;
  std::vector<ProgramNode> nodes;
};

/// The fingerprint of the programs `rank` loaded in `artifact`.
CommunicationFingerprint fingerprintOf(const Artifact &artifact, int rank);

/// One line per item, for the exchange between ranks; parse reads it back.
std::string serializeFingerprint(const CommunicationFingerprint &fingerprint);
CommunicationFingerprint parseFingerprint(const std::string &text);

/// Every rank's fingerprint (index = rank) over `mesh`: the first problem a
/// rank reported; else the first difference between the members of a mesh
/// axis' group in their collectives over that axis; else between ranks that
/// run the same programs; else a send without its recv (or the reverse) or of
/// another shape; else the first node in which the members of a group of a
/// mesh axis other than pp differ. "" when they agree.
std::string findDisagreement(const std::vector<CommunicationFingerprint> &ranks,
                             const schema::MeshSpec &mesh);

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_COMMUNICATIONFINGERPRINT_H
