//===- OnnxProfileDump.cpp - The C++ side of the ONNX profile as JSON -----===//
//
// Prints include/snn/Schema/OnnxProfile.h (the names the importer and the
// legalization read) as one JSON object, for onnx_profile_check.py, which
// compares it with the exporter's names (snnexport/export/names.py).
//
//===----------------------------------------------------------------------===//
#include "snn/Schema/ArtifactOps.h"
#include "snn/Schema/OnnxProfile.h"
#include "snn/Schema/Surrogates.h"

#include <nlohmann/json.hpp>

#include <iostream>

int main() {
  namespace profile = snn::schema::profile;
  nlohmann::ordered_json ops = nlohmann::ordered_json::object();
  nlohmann::ordered_json neurons = nlohmann::ordered_json::array();
  for (const profile::ProfileOp &op : profile::profileOps()) {
    nlohmann::ordered_json attributes = nlohmann::ordered_json::array();
    for (const char *name : op.attributes)
      attributes.push_back(name);
    ops[op.type] = attributes;
    if (profile::isNeuron(op.type))
      neurons.push_back(op.type);
  }
  // Each surrogate: its class, then its parameters' names and defaults.
  nlohmann::ordered_json surrogates = nlohmann::ordered_json::object();
  for (const snn::schema::SurrogateSpec &spec : snn::schema::surrogateSpecs()) {
    nlohmann::ordered_json parameters = {{spec.alpha.name, spec.alpha.defaultValue}};
    if (spec.hasBeta())
      parameters[spec.beta.name] = spec.beta.defaultValue;
    surrogates[spec.name] = {{"class", spec.className}, {"parameters", parameters}};
  }
  nlohmann::ordered_json dump = {
      {"domain", profile::kDomain},
      {"domain_version", profile::kDomainVersion},
      {"artifact_domain", snn::schema::kArtifactDomain},
      {"frozen_key", profile::kFrozenKey},
      {"input_repeated_over_time_key", profile::kInputRepeatedOverTimeKey},
      {"mesh_coordinate_key", snn::schema::kMeshCoordinateKey},
      {"neuron_types", neurons},
      {"op_attributes", ops},
      {"surrogates", surrogates},
  };
  std::cout << dump.dump(2) << "\n";
  return 0;
}
