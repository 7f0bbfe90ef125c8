//===- Passes.h - The snn conversion passes ---------------------*- C++ -*-===//
//
// Every conversion into the snn dialect, declared in Passes.td next to this header, with
// their registration (registerSNNConversionPasses); each conversion's own header declares
// its pass.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_CONVERSION_PASSES_H
#define SNN_CONVERSION_PASSES_H

#include "snn/Conversion/ONNXToSNN/ONNXToSNN.h"

namespace snn {

#define GEN_PASS_REGISTRATION
#include "snn/Conversion/Passes.h.inc"

} // namespace snn

#endif // SNN_CONVERSION_PASSES_H
