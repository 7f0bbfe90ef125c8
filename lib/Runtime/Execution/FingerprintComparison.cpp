//===- FingerprintComparison.cpp - The first difference between ranks -----===//
//
// findDisagreement (CommunicationFingerprint.h). Every rank runs it on the
// same fingerprints, so every rank refuses with the same sentence.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Execution/CommunicationFingerprint.h"
#include "snn/Runtime/Distributed/Mesh.h"
#include "snn/Schema/ArtifactOps.h"
#include "snn/Schema/MeshAxes.h"

#include <algorithm>
#include <map>

namespace meshaxis = snn::schema::meshaxis;

namespace snn::runtime {

namespace {

/// The same communication: shapes compare only where both sides know them.
bool sameStep(const CommunicationStep &a, const CommunicationStep &b) {
  return a.op == b.op && a.meshAxis == b.meshAxis && a.axis == b.axis && a.stage == b.stage &&
         a.slot == b.slot && a.peer == b.peer &&
         (!a.shapeKnown || !b.shapeKnown || a.shape == b.shape);
}

std::vector<const CommunicationStep *> stepsOver(const CommunicationFingerprint &rank,
                                                 const std::string &meshAxis) {
  std::vector<const CommunicationStep *> steps;
  for (const CommunicationStep &step : rank.steps)
    if (meshAxis.empty() || step.meshAxis == meshAxis)
      steps.push_back(&step);
  return steps;
}

/// The first step where `b` differs from `a`, as a sentence; "" when none.
std::string firstDifference(const CommunicationFingerprint &a, const CommunicationFingerprint &b,
                            const std::string &meshAxis) {
  std::vector<const CommunicationStep *> x = stepsOver(a, meshAxis), y = stepsOver(b, meshAxis);
  std::string what = meshAxis.empty() ? "communication" : "collective over mesh axis '" +
                                                              meshAxis + "'";
  std::string ra = "rank " + std::to_string(a.rank), rb = "rank " + std::to_string(b.rank);
  for (size_t i = 0; i < std::max(x.size(), y.size()); ++i) {
    std::string n = " " + what + " #" + std::to_string(i + 1);
    if (i >= y.size())
      return rb + " has no" + n + "; " + ra + "'s is " + x[i]->describe();
    if (i >= x.size())
      return ra + " has no" + n + "; " + rb + "'s is " + y[i]->describe();
    if (!sameStep(*x[i], *y[i]))
      return ra + " and " + rb + " differ in their" + n + ": " + ra + "'s is " +
             x[i]->describe() + ", " + rb + "'s " + y[i]->describe();
  }
  return "";
}

/// Members of each group of each mesh axis run the same collectives over it.
std::string axisDifference(const std::vector<CommunicationFingerprint> &ranks,
                           const schema::MeshSpec &mesh) {
  for (size_t axis = 0; axis < mesh.axes.size(); ++axis)
    for (const std::vector<int> &members : dist::Mesh::slices(mesh.shape, axis))
      for (size_t m = 1; m < members.size(); ++m)
        if (std::string d = firstDifference(ranks[size_t(members[0])],
                                            ranks[size_t(members[m])], mesh.axes[axis]);
            !d.empty())
          return d;
  return "";
}

/// Ranks that run the same program files (the replicas of a dp axis) communicate alike.
std::string replicaDifference(const std::vector<CommunicationFingerprint> &ranks) {
  for (size_t r = 1; r < ranks.size(); ++r)
    for (size_t q = 0; q < r; ++q)
      if (ranks[q].files == ranks[r].files) {
        if (std::string d = firstDifference(ranks[q], ranks[r], ""); !d.empty())
          return d;
        break;
      }
  return "";
}

/// Whether ranks `a` and `b` sit at the same coordinate on every axis but pp.
bool samePipeline(const schema::MeshSpec &mesh, int a, int b) {
  std::vector<int> x = dist::Mesh::coordinatesOf(mesh.shape, a);
  std::vector<int> y = dist::Mesh::coordinatesOf(mesh.shape, b);
  for (size_t i = 0; i < mesh.axes.size(); ++i)
    if (mesh.axes[i] != meshaxis::kPipeline && x[i] != y[i])
      return false;
  return true;
}

/// The other end of a send or recv.
struct Partner {
  int rank = -1;
  const CommunicationStep *step = nullptr;
};

/// The step of `kind` that pairs with `step` (its peer stage, its slot, back to its stage) on
/// a rank of `from`'s pipeline; no step when none.
Partner findPartner(const std::vector<CommunicationFingerprint> &ranks,
                    const schema::MeshSpec &mesh, int from, const std::string &kind,
                    const CommunicationStep &step) {
  for (const CommunicationFingerprint &rank : ranks) {
    if (!samePipeline(mesh, from, rank.rank))
      continue;
    for (const CommunicationStep &other : rank.steps)
      if (other.op == kind && other.stage == step.peer && other.slot == step.slot &&
          other.peer == step.stage)
        return {rank.rank, &other};
  }
  return {};
}

/// Every send has the recv of its slot on the next stage, of the same shape, and the reverse.
std::string transferDifference(const std::vector<CommunicationFingerprint> &ranks,
                               const schema::MeshSpec &mesh) {
  for (const CommunicationFingerprint &rank : ranks)
    for (const CommunicationStep &step : rank.steps) {
      bool send = step.op == schema::op::kSend;
      if (!send && step.op != schema::op::kRecv)
        continue;
      const char *partnerKind = send ? schema::op::kRecv : schema::op::kSend;
      Partner partner = findPartner(ranks, mesh, rank.rank, partnerKind, step);
      std::string who = "rank " + std::to_string(rank.rank) + "'s stage " +
                        std::to_string(step.stage) + " has " + step.describe();
      if (!partner.step)
        return who + ", but no stage " + std::to_string(step.peer) + " program of its " +
               "pipeline has the matching " + partnerKind;
      if (step.shapeKnown && partner.step->shapeKnown && step.shape != partner.step->shape)
        return who + ", but rank " + std::to_string(partner.rank) + "'s stage " +
               std::to_string(step.peer) + " has " + partner.step->describe();
    }
  return "";
}

std::string attributeText(const ProgramNode &node, const std::string &name) {
  for (const auto &[key, value] : node.attributes)
    if (key == name)
      return name + " = " + value;
  return "no " + name;
}

/// How `b` differs from `a` (the same position in two ranks' programs), "" when it does not.
std::string nodeChange(const ProgramNode &a, const ProgramNode &b, const std::string &ra,
                       const std::string &rb) {
  std::string na = ra + "'s node '" + a.node + "' (" + a.op + ") of " + a.file;
  if (a.node != b.node || a.op != b.op)
    return na + ", " + rb + "'s node '" + b.node + "' (" + b.op + ") of " + b.file;
  std::string nb = rb + "'s of " + b.file;
  if (a.wiring != b.wiring)
    return na + " computes " + a.wiring + ", " + nb + " " + b.wiring;
  std::map<std::string, std::string> x(a.attributes.begin(), a.attributes.end());
  std::map<std::string, std::string> y(b.attributes.begin(), b.attributes.end());
  std::map<std::string, std::string> both = x;
  both.insert(y.begin(), y.end());
  for (const auto &entry : both)
    if (!x.count(entry.first) || !y.count(entry.first) || x[entry.first] != y[entry.first])
      return na + " has " + attributeText(a, entry.first) + ", " + nb + " has " +
             attributeText(b, entry.first);
  return "";
}

/// The first node in which rank `b`'s programs differ from rank `a`'s.
std::string firstNodeDifference(const CommunicationFingerprint &a,
                                const CommunicationFingerprint &b) {
  std::string ra = "rank " + std::to_string(a.rank), rb = "rank " + std::to_string(b.rank);
  for (size_t i = 0; i < std::max(a.nodes.size(), b.nodes.size()); ++i) {
    std::string n = " node #" + std::to_string(i + 1);
    if (i >= b.nodes.size())
      return rb + "'s programs end before" + n + "; " + ra + "'s is '" + a.nodes[i].node +
             "' (" + a.nodes[i].op + ") of " + a.nodes[i].file;
    if (i >= a.nodes.size())
      return ra + "'s programs end before" + n + "; " + rb + "'s is '" + b.nodes[i].node +
             "' (" + b.nodes[i].op + ") of " + b.nodes[i].file;
    if (std::string change = nodeChange(a.nodes[i], b.nodes[i], ra, rb); !change.empty())
      return ra + " and " + rb + " differ in their" + n + ": " + change;
  }
  return "";
}

/// Members of a group of every mesh axis but pp run the same nodes (their shapes aside).
std::string computationDifference(const std::vector<CommunicationFingerprint> &ranks,
                                  const schema::MeshSpec &mesh) {
  for (size_t axis = 0; axis < mesh.axes.size(); ++axis) {
    if (mesh.axes[axis] == meshaxis::kPipeline)
      continue;
    for (const std::vector<int> &members : dist::Mesh::slices(mesh.shape, axis))
      for (size_t m = 1; m < members.size(); ++m)
        if (std::string d =
                firstNodeDifference(ranks[size_t(members[0])], ranks[size_t(members[m])]);
            !d.empty())
          return d;
  }
  return "";
}

} // namespace

std::string findDisagreement(const std::vector<CommunicationFingerprint> &ranks,
                             const schema::MeshSpec &mesh) {
  for (const CommunicationFingerprint &rank : ranks)
    if (!rank.problem.empty())
      return rank.problem;
  if (std::string d = axisDifference(ranks, mesh); !d.empty())
    return d;
  if (std::string d = replicaDifference(ranks); !d.empty())
    return d;
  if (std::string d = transferDifference(ranks, mesh); !d.empty())
    return d;
  return computationDifference(ranks, mesh);
}

} // namespace snn::runtime
