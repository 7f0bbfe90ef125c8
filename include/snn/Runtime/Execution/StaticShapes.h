//===- StaticShapes.h - A program's value shapes without running it -*- C++ -*-===//
//
// Before the first collective the ranks compare what they will communicate
// (CommunicationFingerprint.h), which needs the shape of each collective's and
// send's input: derived here from the program's input, its initializers and
// its recv declarations by each op's shape rule, with the batch dimension
// kept symbolic. A value whose shape a rule cannot tell (an op it does not
// know, a malformed attribute, a size it would have to guess) is left out;
// the kernels report such nodes when the program runs.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_STATICSHAPES_H
#define SNN_RUNTIME_EXECUTION_STATICSHAPES_H

#include "snn/Runtime/Execution/Graph.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace snn::runtime {

/// A time-major value's sizes [T, N, ...]; kBatchSize stands for N.
using StaticShape = std::vector<int64_t>;
inline constexpr int64_t kBatchSize = -1;

/// The shapes of `program`'s values that its ops tell: the graph input's is
/// `inputShape` (the manifest's, N as -1; empty when the program has none),
/// a recv's its declared one, an initializer's its tensor's. `axisSizes`
/// gives the members of each mesh axis (all_gather, all_slice).
std::map<std::string, StaticShape>
inferStaticShapes(const Graph &program, const StaticShape &inputShape,
                  const std::map<std::string, int64_t> &axisSizes);

/// "[4, N, 16]" for messages.
std::string formatStaticShape(const StaticShape &shape);

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_STATICSHAPES_H
