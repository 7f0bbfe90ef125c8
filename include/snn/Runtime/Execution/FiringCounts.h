//===- FiringCounts.h - Spikes fired per neuron layer ------------*- C++ -*-===//
//
// The neuron kernels count the spikes they write while they write them (a
// per-tile integer sum, no pass of its own over the spikes); a run given a
// FiringCounts (RunContext::firing) adds each neuron layer's count and size
// here, under the layer's node name, which is the PyTorch module's name.
// The rate of a layer is its spikes over its elements (neurons x steps x
// samples): summed over runs, and over ranks (summing both, a tp slice adds
// its part, a dp shard its samples, a replicated copy leaves the ratio as it
// is).
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_FIRINGCOUNTS_H
#define SNN_RUNTIME_EXECUTION_FIRINGCOUNTS_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace snn::runtime {

/// One neuron layer's count.
struct LayerFiring {
  std::string layer;  // the node's name: the PyTorch module's
  double spikes = 0;  // double: exact to 2^53, and sums over ranks as one tensor
  double elements = 0;
  std::string kernel; // which kernel ran it last ("spiking block", "neuron")
  double rate() const { return elements > 0 ? spikes / elements : 0.0; }
};

class FiringCounts {
public:
  /// Adds one run of `layer`: `spikes` of `elements` fired, by `kernel`.
  void add(const std::string &layer, int64_t spikes, int64_t elements, const char *kernel);
  /// The layers in the order they first ran (the program's order).
  const std::vector<LayerFiring> &layers() const { return counts; }
  /// layer -> rate, in layers() order.
  std::vector<std::pair<std::string, double>> rates() const;
  bool empty() const { return counts.empty(); }
  void clear() { counts.clear(); }
  /// Adds `other`'s counts, layer by layer (new layers go last).
  void merge(const FiringCounts &other);
  /// The counts as 2 * layers().size() doubles (spikes, then elements, per
  /// layer), to be summed over ranks that ran the same layers in the same
  /// order; unpack() takes the sums back.
  void pack(double *out) const;
  void unpack(const double *in);

private:
  std::vector<LayerFiring> counts;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_FIRINGCOUNTS_H
