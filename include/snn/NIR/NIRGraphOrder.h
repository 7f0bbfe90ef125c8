//===- NIRGraphOrder.h - The order a NIR graph's nodes are computed in -*- C++ -*-===//
//
// Edges are data flow: a node is computed after every node with an edge into it. A neuron
// whose output comes back to it through an Affine or Linear (that node reading only the
// neuron and read only by it) is one recurrent unit: the loop's two edges leave the data flow
// and the Affine is computed inside the neuron. Any other cycle has no order.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_NIR_NIRGRAPHORDER_H
#define SNN_NIR_NIRGRAPHORDER_H

#include "snn/NIR/NIRGraph.h"

#include <map>
#include <string>
#include <vector>

namespace snn::nir {

struct NirGraphOrder {
  /// Every node but the feedback Affines, each after the nodes it reads.
  std::vector<const NirNode *> sorted;
  /// The nodes each node reads, in edge order (the feedback loops left out).
  std::map<std::string, std::vector<std::string>> sources;
  /// Each neuron fed back its output: the Affine or Linear of its loop.
  std::map<std::string, const NirNode *> feedback;
  /// Where another cycle remains: a node on it, and the cycle as "a -> b -> a".
  std::string cycleNode, cycle;
};

/// The order of `graph`'s nodes; `cycleNode` set (and `sorted` incomplete) when it has none.
NirGraphOrder orderNirGraph(const NirGraph &graph);

} // namespace snn::nir

#endif // SNN_NIR_NIRGRAPHORDER_H
