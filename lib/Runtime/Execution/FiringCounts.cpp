//===- FiringCounts.cpp - Spikes fired per neuron layer -------------------===//

#include "snn/Runtime/Execution/FiringCounts.h"

namespace snn::runtime {

namespace {

/// A linear search: a program has a few dozen neuron layers at most, and
/// each is looked up once per run.
LayerFiring &entryOf(std::vector<LayerFiring> &counts, const std::string &layer) {
  for (LayerFiring &entry : counts)
    if (entry.layer == layer)
      return entry;
  counts.push_back(LayerFiring{layer, 0, 0, ""});
  return counts.back();
}

} // namespace

void FiringCounts::add(const std::string &layer, int64_t spikes, int64_t elements,
                       const char *kernel) {
  LayerFiring &entry = entryOf(counts, layer);
  entry.spikes += double(spikes);
  entry.elements += double(elements);
  entry.kernel = kernel;
}

std::vector<std::pair<std::string, double>> FiringCounts::rates() const {
  std::vector<std::pair<std::string, double>> out;
  for (const LayerFiring &entry : counts)
    out.emplace_back(entry.layer, entry.rate());
  return out;
}

void FiringCounts::merge(const FiringCounts &other) {
  for (const LayerFiring &entry : other.counts) {
    LayerFiring &mine = entryOf(counts, entry.layer);
    mine.spikes += entry.spikes;
    mine.elements += entry.elements;
    if (!entry.kernel.empty())
      mine.kernel = entry.kernel;
  }
}

void FiringCounts::pack(double *out) const {
  for (const LayerFiring &entry : counts) {
    *out++ = entry.spikes;
    *out++ = entry.elements;
  }
}

void FiringCounts::unpack(const double *in) {
  for (LayerFiring &entry : counts) {
    entry.spikes = *in++;
    entry.elements = *in++;
  }
}

} // namespace snn::runtime
