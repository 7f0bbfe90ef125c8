//===- Manifest.cpp - Parse and validate manifest.json --------------------===//
//
// Validation is strict about what snn-run relies on and silent about fields it
// does not use yet, so that exporters can add information without breaking
// older runtimes of the same format version.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Execution/Manifest.h"
#include "snn/Runtime/Support/Error.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace snn::runtime {

using nlohmann::json;

namespace {

/// Reads typed fields of one JSON object; errors name the file and the field
/// path ("programs[0].file").
class FieldReader {
public:
  FieldReader(const json &object, std::string path, const std::string &file)
      : object(object), path(std::move(path)), file(file) {
    if (!object.is_object())
      fail(this->path.empty() ? "top level must be a JSON object"
                              : "'" + this->path + "' must be an object");
  }

  const json *find(const char *key) const {
    auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
  }
  const json &get(const char *key) const {
    const json *value = find(key);
    if (!value)
      fail("missing '" + field(key) + "'");
    return *value;
  }
  std::string getString(const char *key) const {
    const json &value = get(key);
    if (!value.is_string())
      fail("'" + field(key) + "' must be a string");
    return value.get<std::string>();
  }
  std::string getString(const char *key, const std::string &fallback) const {
    return find(key) ? getString(key) : fallback;
  }
  int64_t getInt(const char *key) const {
    const json &value = get(key);
    if (!value.is_number_integer())
      fail("'" + field(key) + "' must be an integer");
    return value.get<int64_t>();
  }
  bool getBool(const char *key) const {
    const json &value = get(key);
    if (!value.is_boolean())
      fail("'" + field(key) + "' must be true or false");
    return value.get<bool>();
  }
  std::vector<int64_t> getInts(const char *key, int64_t min) const {
    const json &value = get(key);
    std::vector<int64_t> result;
    if (value.is_array())
      for (const json &item : value)
        if (item.is_number_integer() && item.get<int64_t>() >= min)
          result.push_back(item.get<int64_t>());
    if (!value.is_array() || result.size() != value.size())
      fail("'" + field(key) + "' must be an array of integers >= " +
           std::to_string(min));
    return result;
  }
  const json &getArray(const char *key) const {
    const json &value = get(key);
    if (!value.is_array())
      fail("'" + field(key) + "' must be an array");
    return value;
  }
  std::string field(const std::string &key) const {
    return path.empty() ? key : path + "." + key;
  }
  [[noreturn]] void fail(const std::string &message) const {
    throw Error(file + ": " + message);
  }

private:
  const json &object;
  std::string path;
  const std::string &file;
};

std::string indexed(const std::string &array, size_t index) {
  return array + "[" + std::to_string(index) + "]";
}

TensorSpec parseTensorSpec(const FieldReader &top, const char *key,
                           const std::string &file) {
  FieldReader reader(top.get(key), key, file);
  TensorSpec spec;
  spec.name = reader.getString("name");
  spec.shape = reader.getInts("shape", -1);
  spec.timeMajor = reader.getBool("time_major");
  if (spec.timeMajor && spec.shape.size() < 2)
    reader.fail("'" + std::string(key) +
                ".shape' must be [T, N, ...] when time_major is true");
  return spec;
}

void checkFormat(const FieldReader &reader, Manifest &manifest) {
  manifest.format = reader.getString("format");
  if (manifest.format != kArtifactFormat)
    reader.fail("unknown format '" + manifest.format + "' (expected '" +
                kArtifactFormat + "')");
  int64_t version = reader.getInt("version");
  if (version > kArtifactVersion)
    reader.fail("artifact version " + std::to_string(version) +
                " is newer than this snn-run supports (" +
                std::to_string(kArtifactVersion) + ")");
  if (version < 1)
    reader.fail("unknown artifact version " + std::to_string(version));
  manifest.version = int(version);
}

void parseMesh(const FieldReader &reader, Manifest &manifest,
               const std::string &file) {
  int64_t worldSize = reader.getInt("world_size");
  if (worldSize < 1 || worldSize > (1 << 20))
    reader.fail("'world_size' must be a positive integer");
  manifest.worldSize = int(worldSize);
  if (!reader.find("mesh"))
    return;
  FieldReader mesh(reader.get("mesh"), "mesh", file);
  for (const json &axis : mesh.getArray("axes")) {
    if (!axis.is_string())
      reader.fail("'mesh.axes' must be an array of strings");
    manifest.meshAxes.push_back(axis.get<std::string>());
  }
  manifest.meshShape = mesh.getInts("shape", 1);
  if (manifest.meshAxes.size() != manifest.meshShape.size())
    reader.fail("'mesh.axes' and 'mesh.shape' differ in length");
}

bool isSafeRelativePath(const std::string &file) {
  if (file.empty() || file.front() == '/')
    return false;
  std::stringstream parts(file);
  std::string part;
  while (std::getline(parts, part, '/'))
    if (part == "..")
      return false;
  return true;
}

void parsePrograms(const FieldReader &reader, Manifest &manifest,
                   const std::string &file) {
  const json &programs = reader.getArray("programs");
  if (programs.empty())
    reader.fail("'programs' is empty");
  std::set<int64_t> seen;
  for (size_t i = 0; i < programs.size(); ++i) {
    FieldReader entry(programs[i], indexed("programs", i), file);
    ProgramSpec program;
    program.file = entry.getString("file");
    if (!isSafeRelativePath(program.file))
      entry.fail("'" + entry.field("file") +
                 "' must be a path inside the artifact directory");
    for (int64_t rank : entry.getInts("ranks", 0)) {
      if (rank >= manifest.worldSize || !seen.insert(rank).second)
        entry.fail("rank " + std::to_string(rank) +
                   " is out of range or listed twice");
      program.ranks.push_back(int(rank));
    }
    manifest.programs.push_back(std::move(program));
  }
  if (int64_t(seen.size()) != manifest.worldSize)
    reader.fail("'programs' must list every rank below world_size (" +
                std::to_string(manifest.worldSize) + ") once");
}

void parseParameters(const FieldReader &reader, Manifest &manifest,
                     const std::string &file) {
  if (!reader.find("parameters"))
    return;
  const json &parameters = reader.getArray("parameters");
  std::set<std::string> names;
  for (size_t i = 0; i < parameters.size(); ++i) {
    FieldReader entry(parameters[i], indexed("parameters", i), file);
    ParameterSpec parameter;
    parameter.name = entry.getString("name");
    parameter.shape = entry.getInts("shape", 0);
    parameter.kind = entry.getString("kind");
    parameter.sharding = entry.getString("sharding", "replicated");
    if (parameter.kind != "parameter" && parameter.kind != "buffer")
      entry.fail("'" + entry.field("kind") +
                 "' must be \"parameter\" or \"buffer\"");
    if (!names.insert(parameter.name).second)
      entry.fail("parameter '" + parameter.name + "' is listed twice");
    manifest.parameters.push_back(std::move(parameter));
  }
}

void parsePlan(const FieldReader &reader, Manifest &manifest,
               const std::string &file) {
  manifest.planMode = "none";
  manifest.planJson = "{}";
  if (!reader.find("plan"))
    return;
  FieldReader plan(reader.get("plan"), "plan", file);
  manifest.planMode = plan.getString("mode", "none");
  manifest.optimizerStrategy = plan.getString("optimizer_strategy", "none");
  manifest.planJson = reader.get("plan").dump();
}

} // namespace

const ProgramSpec &Manifest::programForRank(int rank) const {
  for (const ProgramSpec &program : programs)
    for (int r : program.ranks)
      if (r == rank)
        return program;
  throw Error("manifest.json: no program for rank " + std::to_string(rank));
}

Manifest parseManifest(const std::string &text, const std::string &name) {
  json document;
  try {
    document = json::parse(text);
  } catch (const json::exception &e) {
    throw Error(name + ": invalid JSON: " + e.what());
  }
  FieldReader reader(document, "", name);
  Manifest manifest;
  checkFormat(reader, manifest);
  manifest.producer = reader.getString("producer", "");
  manifest.source = reader.getString("source", "");
  parseMesh(reader, manifest, name);
  parsePrograms(reader, manifest, name);
  manifest.input = parseTensorSpec(reader, "input", name);
  manifest.output = parseTensorSpec(reader, "output", name);
  parseParameters(reader, manifest, name);
  parsePlan(reader, manifest, name);
  return manifest;
}

Manifest readManifest(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(path + ": cannot open: " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  return parseManifest(text.str(), path);
}

} // namespace snn::runtime
