//===- Manifest.cpp - manifest.json read ------------------------------------===//
//
// The reader of ManifestWriter.cpp's output, under the same key names (ManifestKeys.h). It
// is strict about what snn-run relies on and ignores keys it does not know, so that
// exporters can add information without breaking runtimes of the same version.
//
//===----------------------------------------------------------------------===//
#include "snn/Schema/Manifest.h"
#include "JsonFieldReader.h"
#include "ManifestChecks.h"
#include "ManifestKeys.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace snn::schema {

using nlohmann::json;

namespace {

using FieldReader = JsonFieldReader<ManifestError>;

std::string indexed(const std::string &array, size_t index) {
  return array + "[" + std::to_string(index) + "]";
}

TensorSpec parseTensorSpec(const FieldReader &top, const char *name) {
  FieldReader reader(top.get(name), name, top.fileName());
  TensorSpec spec;
  spec.name = reader.getString(key::kName);
  spec.shape = reader.getInts(key::kShape, -1);
  spec.timeMajor = reader.getBool(key::kTimeMajor);
  if (spec.timeMajor && spec.shape.size() < 2)
    reader.fail("'" + std::string(name) + ".shape' must be [T, N, ...] when time_major is true");
  spec.repeatedOverTime = reader.getBool(key::kRepeatedOverTime, false);
  // Only a time-major input can be a static batch repeated over its T.
  if (spec.repeatedOverTime && (std::string(name) != key::kInput || !spec.timeMajor))
    reader.fail("'" + reader.field(key::kRepeatedOverTime) +
                "' applies to a time-major input only");
  return spec;
}

void checkFormat(const FieldReader &reader, Manifest &manifest) {
  manifest.format = reader.getString(key::kFormat);
  if (manifest.format != kArtifactFormat)
    reader.fail("unknown format '" + manifest.format + "' (expected '" + kArtifactFormat + "')");
  int64_t version = reader.getInt(key::kVersion);
  if (version < kOldestManifestVersion || version > kManifestVersion)
    reader.fail("artifact format " + std::to_string(version) + ", this snn-run reads " +
                std::to_string(kOldestManifestVersion) + " to " +
                std::to_string(kManifestVersion) +
                (version > kManifestVersion
                     ? " (use the snn-run built with the snn-compile that wrote it)"
                     : " (recompile the model with this snn-compile)"));
  manifest.version = int(version);
}

void parseMesh(const FieldReader &reader, Manifest &manifest) {
  int64_t worldSize = reader.getInt(key::kWorldSize);
  if (worldSize < 1 || worldSize > (1 << 20))
    reader.fail("'world_size' must be a positive integer");
  manifest.worldSize = int(worldSize);
  if (!reader.find(key::kMesh))
    return;
  FieldReader mesh(reader.get(key::kMesh), key::kMesh, reader.fileName());
  manifest.mesh.axes = mesh.getStrings(key::kAxes);
  manifest.mesh.shape = mesh.getInts(key::kShape, 1);
  if (manifest.mesh.axes.size() != manifest.mesh.shape.size())
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

/// Every rank below world_size runs a program: exactly one, or (programs with a `stage`)
/// one per logical stage it holds, the stages numbered 0..K-1 (a stage split over tp has
/// one program per tp coordinate).
void parsePrograms(const FieldReader &reader, Manifest &manifest) {
  const json &programs = reader.getArray(key::kPrograms);
  if (programs.empty())
    reader.fail("'programs' is empty");
  std::set<int64_t> seen, stages;
  std::set<std::pair<int64_t, int64_t>> placed; // (rank, stage)
  std::map<int64_t, int64_t> stageRanks;         // stage -> ranks running it
  for (size_t i = 0; i < programs.size(); ++i) {
    FieldReader entry(programs[i], indexed(key::kPrograms, i), reader.fileName());
    ProgramSpec program;
    program.file = entry.getString(key::kFile);
    if (!isSafeRelativePath(program.file))
      entry.fail("'" + entry.field(key::kFile) + "' must be a path inside the artifact directory");
    program.stage = entry.find(key::kStage) ? entry.getInt(key::kStage) : -1;
    // A stage has one program, or one per tp coordinate when its layers are split.
    if (entry.find(key::kStage) && program.stage < 0)
      entry.fail("'" + entry.field(key::kStage) + "' must be a logical stage (>= 0), got " +
                 std::to_string(program.stage));
    if (program.stage >= 0)
      stages.insert(program.stage);
    stageRanks[program.stage] += int64_t(entry.getInts(key::kRanks, 0).size());
    if ((program.stage >= 0) != (i == 0 ? program.stage >= 0 : manifest.programs[0].stage >= 0))
      entry.fail("either every program or none has a 'stage'");
    for (int64_t rank : entry.getInts(key::kRanks, 0)) {
      bool fresh = program.stage >= 0 ? placed.insert({rank, program.stage}).second
                                      : seen.count(rank) == 0;
      if (rank >= manifest.worldSize || !fresh)
        entry.fail("rank " + std::to_string(rank) + " is out of range or listed twice");
      seen.insert(rank);
      program.ranks.push_back(int(rank));
    }
    manifest.programs.push_back(std::move(program));
  }
  if (!stages.empty() && *stages.rbegin() != int64_t(stages.size()) - 1)
    reader.fail("'programs' stages must be numbered 0 to " + std::to_string(stages.size() - 1));
  for (auto [stage, ranks] : stageRanks)
    if (stage >= 0 && ranks != stageRanks.begin()->second)
      reader.fail("'programs': logical stage " + std::to_string(stage) + " is run by " +
                  std::to_string(ranks) + " ranks and stage " +
                  std::to_string(stageRanks.begin()->first) + " by " +
                  std::to_string(stageRanks.begin()->second) +
                  ": every stage runs on the same number of ranks");
  if (int64_t(seen.size()) != manifest.worldSize)
    reader.fail("'programs' must list every rank below world_size (" +
                std::to_string(manifest.worldSize) + ") once");
}

ParameterSpec parseParameter(const FieldReader &entry) {
  ParameterSpec parameter;
  parameter.name = entry.getString(key::kName);
  parameter.shape = entry.getInts(key::kShape, 0);
  std::string kind = entry.getString(key::kKind);
  if (kind != parameterKindName(ParameterKind::Parameter) && kind != parameterKindName(ParameterKind::Buffer))
    entry.fail("'" + entry.field(key::kKind) + "' must be \"parameter\" or \"buffer\"");
  parameter.kind = kind == parameterKindName(ParameterKind::Buffer) ? ParameterKind::Buffer
                                                            : ParameterKind::Parameter;
  parameter.frozen = entry.getBool(key::kFrozen, false);
  if (parameter.frozen && parameter.kind == ParameterKind::Buffer)
    entry.fail("'" + entry.field(key::kFrozen) + "' applies to parameters, not buffers");
  parameter.stage = entry.find(key::kStage) ? entry.getInt(key::kStage) : -1;
  if (entry.find(key::kStage) && parameter.stage < 0)
    entry.fail("'" + entry.field(key::kStage) + "' must be a logical stage (>= 0)");
  parameter.sharding = entry.getString(key::kSharding, kReplicated);
  if (parameter.sharding != kReplicated && parameter.sharding != kSplit)
    entry.fail("'" + entry.field(key::kSharding) + "' must be \"" + kReplicated + "\" or \"" +
               kSplit + "\"");
  if (!parameter.isSplit())
    return parameter;
  parameter.splitDim = entry.getInt(key::kSplitDim);
  parameter.meshAxis = entry.getString(key::kMeshAxis);
  if (parameter.splitDim < 0 || parameter.splitDim >= int64_t(parameter.shape.size()))
    entry.fail("'" + entry.field(key::kSplitDim) + "' must be a dimension of 'shape'");
  parameter.splitGroups = entry.find(key::kSplitGroups) ? entry.getInt(key::kSplitGroups) : 1;
  if (parameter.splitGroups < 1)
    entry.fail("'" + entry.field(key::kSplitGroups) + "' must be >= 1");
  return parameter;
}

/// A split parameter's axis is a mesh axis whose size divides the split dimension.
void checkSplit(const FieldReader &entry, const ParameterSpec &parameter, const MeshSpec &mesh) {
  for (size_t axis = 0; axis < mesh.axes.size(); ++axis) {
    if (mesh.axes[axis] != parameter.meshAxis)
      continue;
    int64_t parts = mesh.shape[axis] * parameter.splitGroups;
    if (parameter.shape[parameter.splitDim] % parts != 0)
      entry.fail("parameter '" + parameter.name + "': dimension " +
                 std::to_string(parameter.splitDim) + " (" +
                 std::to_string(parameter.shape[parameter.splitDim]) +
                 ") does not divide into " +
                 (parameter.splitGroups > 1
                      ? std::to_string(parameter.splitGroups) + " blocks (split_groups) for "
                      : std::string()) +
                 "the " + std::to_string(mesh.shape[axis]) + " members of mesh axis '" +
                 parameter.meshAxis + "'");
    return;
  }
  entry.fail("'" + entry.field(key::kMeshAxis) + "' names no axis of the mesh: '" +
             parameter.meshAxis + "'");
}

void parseParameters(const FieldReader &reader, Manifest &manifest) {
  if (!reader.find(key::kParameters))
    return;
  const json &parameters = reader.getArray(key::kParameters);
  std::set<std::string> names;
  for (size_t i = 0; i < parameters.size(); ++i) {
    FieldReader entry(parameters[i], indexed(key::kParameters, i), reader.fileName());
    ParameterSpec parameter = parseParameter(entry);
    if (!names.insert(parameter.name).second)
      entry.fail("parameter '" + parameter.name + "' is listed twice");
    if (parameter.isSplit())
      checkSplit(entry, parameter, manifest.mesh);
    manifest.parameters.push_back(std::move(parameter));
  }
}

std::vector<std::vector<std::string>> parseStageUnits(const FieldReader &plan) {
  std::vector<std::vector<std::string>> stages;
  const json &list = plan.getArray(plankey::kStageUnits);
  for (size_t i = 0; i < list.size(); ++i) {
    std::vector<std::string> units;
    for (const json &unit : list[i]) {
      if (!list[i].is_array() || !unit.is_string())
        plan.fail("'" + plan.field(plankey::kStageUnits) + "' must be arrays of strings");
      units.push_back(unit.get<std::string>());
    }
    stages.push_back(std::move(units));
  }
  return stages;
}

/// `plan.communication`: optional (written since partitioned artifacts exist).
std::vector<CommunicationVolume> parseCommunication(const FieldReader &plan) {
  std::vector<CommunicationVolume> volumes;
  const json &list = plan.getArray(plankey::kCommunication);
  for (size_t i = 0; i < list.size(); ++i) {
    FieldReader entry(list[i], indexed(plan.field(plankey::kCommunication), i),
                      plan.fileName());
    CommunicationVolume v;
    v.kind = entry.getString(key::kKind);
    v.meshAxis = entry.getString(key::kMeshAxis);
    v.calls = entry.getInt(plankey::kCalls);
    v.bytes = entry.getInt(plankey::kBytes);
    if (v.calls < 0 || v.bytes < 0)
      entry.fail("'" + entry.field(plankey::kCalls) + "' and '" +
                 entry.field(plankey::kBytes) + "' must not be negative");
    volumes.push_back(std::move(v));
  }
  return volumes;
}

/// Version 2's pipeline and tensor-parallel fields (version 1 never ran them).
void parsePlanLayout(const FieldReader &plan, PlanSpec &spec) {
  using namespace plankey;
  spec.batchSize = plan.getInt(kBatchSize, 0);
  // 0 means "planned for no batch": only an unplanned artifact (or one that does not record
  // it) has none; snn-compile plans only for a global batch of at least 1.
  if (spec.batchSize < 0 || (plan.find(kBatchSize) && spec.batchSize == 0 &&
                             spec.mode != ParallelMode::None))
    plan.fail("'" + plan.field(kBatchSize) + "' is " + std::to_string(spec.batchSize) +
              ": " + (spec.batchSize < 0 ? "a batch size is never negative"
                                         : "a planned artifact (plan mode '" +
                                               std::string(nameOf(spec.mode)) +
                                               "') records the global batch it was planned "
                                               "for, at least 1"));
  spec.memoptLevel = plan.getInt(kMemoptLevel, 0);
  spec.dpMeshDim = plan.getInt(kDpMeshDim, -1);
  spec.tpMeshDim = plan.getInt(kTpMeshDim, -1);
  spec.ppMeshDim = plan.getInt(kPpMeshDim, -1);
  spec.ppMicrobatches = plan.getInt(kMicrobatches, 0);
  std::string schedule = plan.getString(kSchedule, "none");
  if (schedule != "none")
    spec.ppSchedule = plan.getEnum<PipelineSchedule>(kSchedule);
  spec.ppVirtualStages = plan.getInt(kVirtualStages, 0);
  if (plan.find(kLayout))
    spec.ppLayout = plan.getInts(kLayout, 0);
  if (plan.find(kMemoptStages))
    spec.ppMemoptStages = plan.getInts(kMemoptStages, 0);
  spec.ppDelayWgrad = plan.getBool(kDelayWgrad, false);
  if (plan.find(kStageUnits))
    spec.ppStageUnits = parseStageUnits(plan);
  if (plan.find(kStageCosts))
    spec.ppStageCosts = plan.getNonNegativeDoubles(kStageCosts);
  if (plan.find(kTensorParallelPairs))
    spec.tensorParallelPairs = plan.getStrings(kTensorParallelPairs);
  if (plan.find(kCommunication))
    spec.communication = parseCommunication(plan);
}

PlanPrediction parsePrediction(const FieldReader &plan) {
  using namespace plankey;
  FieldReader reader(plan.get(kPrediction), plan.field(kPrediction), plan.fileName());
  PlanPrediction p;
  p.stepSeconds = reader.getDouble(kStepSeconds);
  p.computeSeconds = reader.getDouble(kComputeSeconds);
  p.commSeconds = reader.getDouble(kCommSeconds);
  p.memoryBytes = reader.getInt(kMemoryBytes);
  p.times = reader.getString(kTimes);
  p.optimizerStates = reader.getInt(kOptimizerStates, 2); // before it was recorded: Adam's
  if (!(p.stepSeconds >= 0) || !(p.computeSeconds >= 0) || !(p.commSeconds >= 0) ||
      p.memoryBytes < 0)
    reader.fail("'plan.prediction' must hold non-negative times and bytes");
  if (p.optimizerStates < 0 || p.optimizerStates > 2)
    reader.fail("'plan.prediction.optimizer_states' must be 0, 1 or 2");
  return p;
}

void parsePlan(const FieldReader &reader, Manifest &manifest) {
  using namespace plankey;
  if (!reader.find(key::kPlan))
    return;
  FieldReader plan(reader.get(key::kPlan), key::kPlan, reader.fileName());
  PlanSpec &spec = manifest.plan;
  spec.mode = plan.find(kMode) ? plan.getEnum<ParallelMode>(kMode) : ParallelMode::None;
  if (plan.find(kObjective))
    spec.objective = plan.getEnum<Objective>(kObjective);
  if (plan.find(kOptimizer))
    spec.optimizer = plan.getEnum<OptimizerStrategy>(kOptimizer);
  spec.partitioned = plan.getBool(kPartitioned, false);
  spec.decidedBy = plan.getString(kDecidedBy, "");
  if (plan.find(kRationale))
    spec.rationale = plan.getStrings(kRationale);
  if (manifest.version >= 2)
    parsePlanLayout(plan, spec);
  if (plan.find(kPrediction))
    spec.prediction = parsePrediction(plan);
}

PlanCandidate parseCandidate(const FieldReader &entry) {
  using namespace explainkey;
  PlanCandidate c;
  c.label = entry.getString(kLabel);
  c.mesh = entry.getString(kMesh);
  c.feasible = entry.getBool(kFeasible);
  if (!c.feasible) {
    c.reason = entry.getString(kReason);
    return c;
  }
  c.stepSeconds = entry.getDouble(kStep);
  c.computeSeconds = entry.getDouble(kCompute);
  c.commSeconds = entry.getDouble(kComm);
  c.commBytes = entry.getInt(kCommBytes);
  c.memoryBytes = entry.getInt(kMemoryBytes);
  c.stateBytes = entry.getInt(kStateBytes);
  c.activationBytes = entry.getInt(kActivationBytes);
  c.memoptLevel = entry.getInt(kMemopt);
  c.fitsBudget = entry.getBool(kFits);
  return c;
}

ModelSummary parseModelSummary(const FieldReader &model) {
  using namespace explainkey;
  ModelSummary m;
  m.timeSteps = model.getInt(kTimeSteps);
  m.paramBytes = model.getInt(kParamBytes);
  m.bufferBytes = model.getInt(kBufferBytes);
  m.forwardFlops = model.getDouble(kForwardFlops);
  m.activationBytes = model.getInt(kActivationBytes);
  m.pipelineUnits = model.getInt(kPipelineUnits);
  return m;
}

PlanExplanation parseExplanation(const FieldReader &reader) {
  using namespace explainkey;
  PlanExplanation e;
  e.topology = reader.getString(kTopology);
  e.worldSize = reader.getInt(kWorldSize);
  FieldReader features(reader.get(kFeatures), reader.field(kFeatures), reader.fileName());
  e.experimentalConvTP = features.getBool(kConvTP);
  e.allowPipeline = features.getBool(kAllowPipeline);
  e.allowZero = features.getBool(kAllowZero);
  e.memoryBudget = reader.getInt(kMemoryBudget);
  e.tensorParallelRoots = reader.getStrings(kRoots);
  e.notes = reader.getStrings(kNotes);
  const json &candidates = reader.getArray(kCandidates);
  for (size_t i = 0; i < candidates.size(); ++i)
    e.candidates.push_back(parseCandidate(
        FieldReader(candidates[i], indexed(reader.field(kCandidates), i), reader.fileName())));
  if (reader.find(kModel))
    e.model = parseModelSummary(
        FieldReader(reader.get(kModel), reader.field(kModel), reader.fileName()));
  return e;
}

} // namespace

std::vector<int64_t> ParameterSpec::localShape(int64_t parts) const {
  std::vector<int64_t> local = shape;
  if (isSplit() && splitDim >= 0 && splitDim < int64_t(local.size()) && parts > 0)
    local[size_t(splitDim)] /= parts;
  return local;
}

const char *parameterKindName(ParameterKind kind) {
  return kind == ParameterKind::Buffer ? "buffer" : "parameter";
}

const ProgramSpec &Manifest::programForRank(int rank) const {
  for (const ProgramSpec &program : programs)
    for (int r : program.ranks)
      if (r == rank)
        return program;
  throw ManifestError("manifest.json: no program for rank " + std::to_string(rank));
}

std::vector<const ProgramSpec *> Manifest::programsForRank(int rank) const {
  std::vector<const ProgramSpec *> held;
  for (const ProgramSpec &program : programs)
    for (int r : program.ranks)
      if (r == rank)
        held.push_back(&program);
  if (held.empty())
    throw ManifestError("manifest.json: no program for rank " + std::to_string(rank));
  std::stable_sort(held.begin(), held.end(), [](const ProgramSpec *a, const ProgramSpec *b) {
    return a->stage < b->stage;
  });
  return held;
}

int64_t Manifest::stageCount() const {
  int64_t count = 0;
  for (const ProgramSpec &program : programs)
    count = std::max(count, program.stage + 1);
  return count;
}

Manifest parseManifest(const std::string &text, const std::string &name) {
  if (text.size() > kMaxManifestBytes)
    throw ManifestError(name + ": larger than " + std::to_string(kMaxManifestBytes >> 20) +
                        " MiB, not a manifest");
  // Refused while parsing, so a hostile file never becomes a deep tree to walk or free.
  json::parser_callback_t limitDepth = [&](int depth, json::parse_event_t, json &) {
    if (depth > kMaxManifestDepth)
      throw ManifestError(name + ": nested deeper than " +
                          std::to_string(kMaxManifestDepth) + " levels, not a manifest");
    return true;
  };
  json document;
  try {
    document = json::parse(text, limitDepth);
  } catch (const json::exception &e) {
    throw ManifestError(name + ": invalid JSON: " + e.what());
  }
  FieldReader reader(document, "", name);
  Manifest manifest;
  checkFormat(reader, manifest);
  manifest.producer = reader.getString(key::kProducer, "");
  manifest.source = reader.getString(key::kSource, "");
  parseMesh(reader, manifest);
  parsePrograms(reader, manifest);
  manifest.input = parseTensorSpec(reader, key::kInput);
  manifest.output = parseTensorSpec(reader, key::kOutput);
  parseParameters(reader, manifest);
  parsePlan(reader, manifest);
  if (manifest.version >= 2 && reader.find(key::kExplanation))
    manifest.explanation = parseExplanation(
        FieldReader(reader.get(key::kExplanation), key::kExplanation, name));
  checkManifestAgainstPlan(manifest, name);
  return manifest;
}

} // namespace snn::schema
