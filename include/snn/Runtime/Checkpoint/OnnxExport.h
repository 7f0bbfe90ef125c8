//===- OnnxExport.h - Trained weights back into the ONNX --------*- C++ -*-===//
#ifndef SNN_RUNTIME_CHECKPOINT_ONNXEXPORT_H
#define SNN_RUNTIME_CHECKPOINT_ONNXEXPORT_H

#include "snn/Runtime/Execution/ParameterStore.h"

#include <string>
#include <vector>

namespace snn::runtime {

/// Writes the program ONNX at `programPath` to `outPath` (atomically) with
/// every initializer that `store` holds replaced by its current value, as
/// float32 raw_data. Everything else -- nodes, attributes, other
/// initializers -- is copied unchanged, so the file is still a program
/// snn-run loads and snnexport.load_onnx_weights reads.
void exportTrainedOnnx(const std::string &programPath,
                       const ParameterStore &store, const std::string &outPath);

/// A pipeline artifact's stage programs (`stagePaths`, in stage order)
/// joined into one program of the whole model, written as exportTrainedOnnx
/// writes one: each stage's values are renamed "s<k>/<name>" (initializers,
/// stage 0's graph input `inputName` and the last stage's graph output
/// `outputName` keep their names), every use of a recv's output becomes the
/// value the previous stage sends in that slot, and the recv and send nodes
/// are dropped. The result is an ordinary (non-pipeline) program.
void exportTrainedPipelineOnnx(const std::vector<std::string> &stagePaths,
                               const std::string &inputName,
                               const std::string &outputName,
                               const ParameterStore &store, const std::string &outPath);

} // namespace snn::runtime

#endif // SNN_RUNTIME_CHECKPOINT_ONNXEXPORT_H
