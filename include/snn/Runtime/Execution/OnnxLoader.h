//===- OnnxLoader.h - Program ONNX file -> Graph ----------------*- C++ -*-===//
#ifndef SNN_RUNTIME_EXECUTION_ONNXLOADER_H
#define SNN_RUNTIME_EXECUTION_ONNXLOADER_H

#include "snn/Runtime/Execution/Graph.h"

#include <string>

namespace snn::runtime {

/// Loads a program ONNX file. Throws Error naming the file for a missing,
/// truncated or non-ONNX file, a wrong opset, or a malformed initializer.
Graph loadOnnxProgram(const std::string &path);

/// As loadOnnxProgram, from serialised ModelProto bytes.
Graph parseOnnxProgram(const std::string &bytes, const std::string &name);

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_ONNXLOADER_H
