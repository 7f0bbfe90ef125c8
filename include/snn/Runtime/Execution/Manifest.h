//===- Manifest.h - The artifact's manifest.json for the runtime -*- C++ -*-===//
//
// The manifest's structs and its JSON are the schema's (snn/Schema/Manifest.h),
// shared with the exporter; this header gives them the runtime's names and
// reports a malformed manifest as the runtime's Error.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_MANIFEST_H
#define SNN_RUNTIME_EXECUTION_MANIFEST_H

#include "snn/Schema/Manifest.h"

#include <string>

namespace snn::runtime {

using schema::Manifest;
using schema::ParameterKind;
using schema::ParameterSpec;
using schema::ProgramSpec;
using schema::TensorSpec;

/// Parses and validates manifest text; `name` is used in error messages.
/// Throws Error.
Manifest parseManifest(const std::string &text, const std::string &name);

/// Reads and validates `path`. Throws Error.
Manifest readManifest(const std::string &path);

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_MANIFEST_H
