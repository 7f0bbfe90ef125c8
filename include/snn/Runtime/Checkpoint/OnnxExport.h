//===- OnnxExport.h - Trained weights back into the ONNX --------*- C++ -*-===//
#ifndef SNN_RUNTIME_CHECKPOINT_ONNXEXPORT_H
#define SNN_RUNTIME_CHECKPOINT_ONNXEXPORT_H

#include "snn/Runtime/Execution/ParameterStore.h"

#include <string>

namespace snn::runtime {

/// Writes the program ONNX at `programPath` to `outPath` (atomically) with
/// every initializer that `store` holds replaced by its current value, as
/// float32 raw_data. Everything else -- nodes, attributes, other
/// initializers -- is copied unchanged, so the file is still a program
/// snn-run loads and snnexport.load_onnx_weights reads.
void exportTrainedOnnx(const std::string &programPath,
                       const ParameterStore &store, const std::string &outPath);

} // namespace snn::runtime

#endif // SNN_RUNTIME_CHECKPOINT_ONNXEXPORT_H
