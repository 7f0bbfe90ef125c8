//===- ManifestChecks.h - A parsed manifest's fields against its plan -*- C++ -*-===//
//
// Private to SNNSchema: parseManifest calls it once every field is read, because most of
// these checks compare one field with others (a mesh dimension with the mesh, a parameter's
// stage with the plan's mode).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_LIB_SCHEMA_MANIFESTCHECKS_H
#define SNN_LIB_SCHEMA_MANIFESTCHECKS_H

#include "snn/Schema/Manifest.h"

#include <string>

namespace snn::schema {

/// Refuses fields out of their range or at odds with the rest of the plan
/// (docs/artifact-format.md, "What the reader checks"). Throws ManifestError whose message
/// names `name` (the manifest's path), the field and its value.
void checkManifestAgainstPlan(const Manifest &manifest, const std::string &name);

} // namespace snn::schema

#endif // SNN_LIB_SCHEMA_MANIFESTCHECKS_H
