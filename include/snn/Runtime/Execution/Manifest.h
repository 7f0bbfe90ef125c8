//===- Manifest.h - The artifact's manifest.json ----------------*- C++ -*-===//
//
// Plain structs for docs/artifact-format.md's manifest. The JSON library stays
// in Manifest.cpp so that users of these structs compile fast.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_MANIFEST_H
#define SNN_RUNTIME_EXECUTION_MANIFEST_H

#include <cstdint>
#include <string>
#include <vector>

namespace snn::runtime {

/// The manifest's `format` and the newest `version` this runtime reads.
constexpr const char *kArtifactFormat = "spikemesh-artifact";
constexpr int kArtifactVersion = 1;

/// `input` / `output`: a tensor at the program boundary. -1 is a dynamic dim.
struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  bool timeMajor = false;
};

/// One entry of `programs`: an ONNX file and the ranks that run it.
struct ProgramSpec {
  std::string file;
  std::vector<int> ranks;
};

/// One entry of `parameters`.
struct ParameterSpec {
  std::string name;
  std::vector<int64_t> shape;
  std::string kind;     // "parameter" or "buffer"
  std::string sharding; // "replicated", or a mode-specific description
};

struct Manifest {
  std::string format;
  int version = 0;
  std::string producer;
  std::string source;
  int worldSize = 1;
  std::vector<std::string> meshAxes;
  std::vector<int64_t> meshShape;
  std::vector<ProgramSpec> programs;
  TensorSpec input;
  TensorSpec output;
  std::vector<ParameterSpec> parameters;
  std::string planMode;
  /// The plan's `optimizer_strategy` ("none", "zero"); "none" if absent.
  std::string optimizerStrategy = "none";
  /// The whole `plan` object, serialised, for later modes to interpret.
  std::string planJson;

  /// The program that `rank` runs; throws Error if no program lists it.
  const ProgramSpec &programForRank(int rank) const;
};

/// Parses and validates manifest text; `name` is used in error messages.
Manifest parseManifest(const std::string &text, const std::string &name);

/// Reads and validates `path`.
Manifest readManifest(const std::string &path);

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_MANIFEST_H
