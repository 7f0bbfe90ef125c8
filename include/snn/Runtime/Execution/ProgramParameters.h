//===- ProgramParameters.h - A program's initializers against the manifest -*- C++ -*-===//
//
// The manifest lists exactly the parameters each program holds (the exporter writes one
// entry per initializer). A program initializer without an entry would run as a constant
// that training never updates and a split over tp would never gather; an entry without its
// initializer means the program belongs to another artifact or stage. Both are refused
// before the program runs.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_PROGRAMPARAMETERS_H
#define SNN_RUNTIME_EXECUTION_PROGRAMPARAMETERS_H

#include "snn/Runtime/Execution/Graph.h"
#include "snn/Runtime/Execution/Manifest.h"

#include <cstdint>

namespace snn::runtime {

/// Throws Error, naming the program's file and the parameter, unless `program`'s
/// initializers are exactly the manifest's parameters of `stage` (-1: a program without a
/// stage, which holds every parameter).
void checkProgramParameters(const Manifest &manifest, const Graph &program, int64_t stage);

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_PROGRAMPARAMETERS_H
