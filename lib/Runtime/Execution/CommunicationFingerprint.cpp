//===- CommunicationFingerprint.cpp - What a rank will communicate --------===//
//
// Building a rank's fingerprint from its programs and the text form the
// ranks exchange. The comparison is FingerprintComparison.cpp.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Execution/CommunicationFingerprint.h"
#include "snn/Runtime/Execution/NodeAttributes.h"
#include "snn/Runtime/Execution/ProgramCoordinate.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Schema/ArtifactOps.h"

#include <map>
#include <sstream>

namespace snn::runtime {

namespace attr = schema::attr;
namespace op = schema::op;

namespace {

bool isCollective(const std::string &type) {
  return type == op::kAllReduce || type == op::kAllGather || type == op::kAllSlice ||
         type == op::kBackwardAllReduce;
}

/// A node's int attribute, or -1 (a malformed one is its kernel builder's to report).
int64_t intOr(const Node &node, const char *name) {
  try {
    return NodeAttributes(node).getInt(name, -1);
  } catch (const Error &) {
    return -1;
  }
}

std::string stringOr(const Node &node, const char *name) {
  try {
    return NodeAttributes(node).getString(name, "");
  } catch (const Error &) {
    return "";
  }
}

/// The collectives, sends and recvs of one program, in program order.
void addSteps(const Manifest &manifest, const Graph &program, int64_t stage,
              std::vector<CommunicationStep> &steps) {
  std::map<std::string, int64_t> axisSizes;
  for (size_t i = 0; i < manifest.mesh.axes.size() && i < manifest.mesh.shape.size(); ++i)
    axisSizes[manifest.mesh.axes[i]] = manifest.mesh.shape[i];
  StaticShape input = program.inputs.empty() ? StaticShape{} : manifest.input.shape;
  std::map<std::string, StaticShape> shapes = inferStaticShapes(program, input, axisSizes);
  for (const Node &node : program.nodes) {
    bool collective = isCollective(node.opType);
    if (!collective && node.opType != op::kSend && node.opType != op::kRecv)
      continue;
    CommunicationStep step;
    step.op = node.opType;
    step.stage = stage;
    step.node = node.name;
    step.file = program.file;
    if (collective) {
      step.meshAxis = stringOr(node, attr::kMeshAxis);
      if (node.opType == op::kAllGather || node.opType == op::kAllSlice)
        step.axis = intOr(node, attr::kAxis);
    } else {
      step.slot = intOr(node, attr::kSlot);
      step.peer = intOr(node, attr::kPeer);
    }
    // What it communicates: a recv its output, the others their input.
    const std::vector<std::string> &values = node.opType == op::kRecv ? node.outputs : node.inputs;
    std::string value = values.empty() ? std::string() : values[0];
    if (auto it = shapes.find(value); it != shapes.end())
      step.shapeKnown = true, step.shape = it->second;
    steps.push_back(std::move(step));
  }
}

std::string joinNames(const std::vector<std::string> &names) {
  std::string text;
  for (size_t i = 0; i < names.size(); ++i)
    text += (i ? ", " : "") + names[i];
  return text;
}

/// Every node of one program, in program order.
void addNodes(const Graph &program, int64_t stage, std::vector<ProgramNode> &nodes) {
  for (const Node &node : program.nodes) {
    ProgramNode entry{stage, node.name, node.opType,
                      joinNames(node.inputs) + " -> " + joinNames(node.outputs), {}, program.file};
    for (const auto &[name, value] : node.attributes)
      entry.attributes.emplace_back(name, formatAttributeValue(value));
    nodes.push_back(std::move(entry));
  }
}

/// Tabs and newlines separate the text form's fields and lines.
std::string field(std::string text) {
  for (char &c : text)
    if (c == '\t' || c == '\n' || c == '\r')
      c = ' ';
  return text;
}

/// Every field, the empty ones too (an attribute's value may be "").
std::vector<std::string> splitFields(const std::string &line) {
  std::vector<std::string> fields;
  size_t start = 0;
  for (size_t tab; (tab = line.find('\t', start)) != std::string::npos; start = tab + 1)
    fields.push_back(line.substr(start, tab - start));
  fields.push_back(line.substr(start));
  return fields;
}

std::string formatInts(const std::vector<int64_t> &values) {
  std::string text;
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? "," : "") + std::to_string(values[i]);
  return text;
}

std::vector<int64_t> parseInts(const std::string &text) {
  std::vector<int64_t> values;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ','))
    values.push_back(std::stoll(item));
  return values;
}

CommunicationStep parseStep(const std::vector<std::string> &f) {
  if (f.size() != 11)
    throw Error("malformed communication fingerprint from another rank");
  CommunicationStep step;
  step.op = f[1];
  step.meshAxis = f[2];
  step.axis = std::stoll(f[3]);
  step.stage = std::stoll(f[4]);
  step.slot = std::stoll(f[5]);
  step.peer = std::stoll(f[6]);
  step.shapeKnown = f[7] == "1";
  step.shape = parseInts(f[8]);
  step.node = f[9];
  step.file = f[10];
  return step;
}

/// "node", stage, name, op, wiring, file, then each attribute's name and value.
ProgramNode parseNode(const std::vector<std::string> &f) {
  if (f.size() < 6 || f.size() % 2 != 0)
    throw Error("malformed communication fingerprint from another rank");
  ProgramNode node{std::stoll(f[1]), f[2], f[3], f[4], {}, f[5]};
  for (size_t i = 6; i < f.size(); i += 2)
    node.attributes.emplace_back(f[i], f[i + 1]);
  return node;
}

} // namespace

std::string CommunicationStep::describe() const {
  std::string text = op;
  if (!meshAxis.empty())
    text += " over '" + meshAxis + "'";
  if (axis >= 0)
    text += " along dimension " + std::to_string(axis);
  if (slot >= 0)
    text += " of slot " + std::to_string(slot) + (op == op::kSend ? " to" : " from") +
            " stage " + std::to_string(peer);
  text += shapeKnown ? " of " + formatStaticShape(shape) : std::string(" (shape unknown)");
  return text + " (node '" + node + "' of " + file + ")";
}

CommunicationFingerprint fingerprintOf(const Artifact &artifact, int rank) {
  CommunicationFingerprint fingerprint;
  fingerprint.rank = rank;
  fingerprint.problem = coordinateProblem(artifact, rank);
  if (artifact.stages.empty()) {
    fingerprint.files.push_back(artifact.program.file);
    fingerprint.stages.push_back(-1);
    addSteps(artifact.manifest, artifact.program, -1, fingerprint.steps);
    addNodes(artifact.program, -1, fingerprint.nodes);
  }
  for (const StageProgram &stage : artifact.stages) {
    fingerprint.files.push_back(stage.program.file);
    fingerprint.stages.push_back(stage.stage);
    addSteps(artifact.manifest, stage.program, stage.stage, fingerprint.steps);
    addNodes(stage.program, stage.stage, fingerprint.nodes);
  }
  return fingerprint;
}

std::string serializeFingerprint(const CommunicationFingerprint &fingerprint) {
  std::string text = "rank\t" + std::to_string(fingerprint.rank) + "\n";
  if (!fingerprint.problem.empty())
    text += "problem\t" + field(fingerprint.problem) + "\n";
  for (size_t i = 0; i < fingerprint.files.size(); ++i)
    text += "program\t" + std::to_string(fingerprint.stages[i]) + "\t" +
            field(fingerprint.files[i]) + "\n";
  for (const CommunicationStep &s : fingerprint.steps)
    text += "step\t" + field(s.op) + "\t" + field(s.meshAxis) + "\t" + std::to_string(s.axis) +
            "\t" + std::to_string(s.stage) + "\t" + std::to_string(s.slot) + "\t" +
            std::to_string(s.peer) + "\t" + (s.shapeKnown ? "1" : "0") + "\t" +
            formatInts(s.shape) + "\t" + field(s.node) + "\t" + field(s.file) + "\n";
  for (const ProgramNode &n : fingerprint.nodes) {
    text += "node\t" + std::to_string(n.stage) + "\t" + field(n.node) + "\t" + field(n.op) +
            "\t" + field(n.wiring) + "\t" + field(n.file);
    for (const auto &[name, value] : n.attributes)
      text += "\t" + field(name) + "\t" + field(value);
    text += "\n";
  }
  return text;
}

CommunicationFingerprint parseFingerprint(const std::string &text) {
  CommunicationFingerprint fingerprint;
  std::stringstream in(text);
  std::string line;
  try {
    while (std::getline(in, line)) {
      std::vector<std::string> f = splitFields(line);
      if (f.size() == 2 && f[0] == "rank")
        fingerprint.rank = std::stoi(f[1]);
      else if (f.size() == 2 && f[0] == "problem")
        fingerprint.problem = f[1];
      else if (f.size() == 3 && f[0] == "program")
        fingerprint.stages.push_back(std::stoll(f[1])), fingerprint.files.push_back(f[2]);
      else if (!f.empty() && f[0] == "step")
        fingerprint.steps.push_back(parseStep(f));
      else if (!f.empty() && f[0] == "node")
        fingerprint.nodes.push_back(parseNode(f));
    }
  } catch (const std::logic_error &) { // std::stoll's invalid_argument, out_of_range
    throw Error("malformed communication fingerprint from another rank");
  }
  return fingerprint;
}

} // namespace snn::runtime
