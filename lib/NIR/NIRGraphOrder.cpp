//===- NIRGraphOrder.cpp - The order a NIR graph's nodes are computed in ----===//
#include "snn/NIR/NIRGraphOrder.h"

#include "snn/NIR/NIRNeurons.h"

#include <algorithm>
#include <set>
#include <utility>

namespace snn::nir {

namespace {

/// The feedback loops of `graph` (into `order.feedback`) and its edges without them.
std::vector<std::pair<std::string, std::string>> dataFlow(const NirGraph &graph,
                                                          NirGraphOrder &order,
                                                          std::set<std::string> &absorbed) {
  std::map<std::string, std::vector<std::string>> in, out;
  for (const auto &[from, to] : graph.edges) {
    in[to].push_back(from);
    out[from].push_back(to);
  }
  for (const NirNode &node : graph.nodes) {
    if (node.type != "Affine" && node.type != "Linear")
      continue;
    const std::vector<std::string> &from = in[node.name], &to = out[node.name];
    if (from.size() != 1 || to.size() != 1 || from.front() != to.front())
      continue;
    const NirNode *neuron = graph.node(from.front());
    if (neuron && isNeuronPrimitive(neuron->type) && !order.feedback.count(neuron->name)) {
      order.feedback[neuron->name] = &node;
      absorbed.insert(node.name);
    }
  }
  std::vector<std::pair<std::string, std::string>> edges;
  for (const auto &edge : graph.edges)
    if (!absorbed.count(edge.first) && !absorbed.count(edge.second))
      edges.push_back(edge);
  return edges;
}

/// Walks back through the nodes still waiting on an input: the first one met twice is on a
/// cycle.
void findCycle(const NirGraph &graph, std::map<std::string, int> &pending, NirGraphOrder &order) {
  std::vector<std::string> path;
  std::string at;
  for (const NirNode &node : graph.nodes)
    if (pending[node.name] > 0 && at.empty())
      at = node.name;
  while (std::find(path.begin(), path.end(), at) == path.end()) {
    path.push_back(at);
    for (const std::string &from : order.sources[at])
      if (pending[from] > 0) {
        at = from;
        break;
      }
  }
  order.cycleNode = at;
  order.cycle = at;
  for (auto it = path.rbegin(); *it != at; ++it)
    order.cycle += " -> " + *it;
  order.cycle += " -> " + at;
}

} // namespace

NirGraphOrder orderNirGraph(const NirGraph &graph) {
  NirGraphOrder order;
  std::set<std::string> absorbed;
  std::vector<std::pair<std::string, std::string>> edges = dataFlow(graph, order, absorbed);
  std::map<std::string, int> pending;
  for (const NirNode &node : graph.nodes)
    pending[node.name] = 0;
  for (const auto &[from, to] : edges) {
    order.sources[to].push_back(from);
    ++pending[to];
  }
  std::vector<const NirNode *> ready;
  for (const NirNode &node : graph.nodes)
    if (pending[node.name] == 0 && !absorbed.count(node.name))
      ready.push_back(&node);
  while (!ready.empty()) {
    const NirNode *node = ready.front();
    ready.erase(ready.begin());
    order.sorted.push_back(node);
    for (const auto &[from, to] : edges)
      if (from == node->name && --pending[to] == 0)
        ready.push_back(graph.node(to));
  }
  if (order.sorted.size() + absorbed.size() != graph.nodes.size())
    findCycle(graph, pending, order);
  return order;
}

} // namespace snn::nir
