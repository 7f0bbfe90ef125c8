//===- ParameterPartition.h - Split parameters and this rank's parts -*- C++ -*-===//
//
// A partitioned artifact's `split` parameters (docs/artifact-format.md): the
// program of the rank at coordinate i of the parameter's mesh axis holds part
// i of its split dimension. What leaves a run whole -- checkpoints,
// --save-params, --export-onnx -- is the whole tensor, gathered from the
// members' parts; what enters one (--resume, --params, --checkpoint) is cut
// back into this rank's part. Parameters that are not split pass unchanged.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_PARAMETERPARTITION_H
#define SNN_RUNTIME_EXECUTION_PARAMETERPARTITION_H

#include "snn/Runtime/Execution/Manifest.h"
#include "snn/Runtime/Execution/MeshContext.h"
#include "snn/Runtime/Execution/ParameterStore.h"

#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <vector>

namespace snn::runtime {

class ParameterPartition {
public:
  /// Nothing split.
  ParameterPartition() = default;
  /// The manifest's split parameters, placed on `mesh` (which must outlive
  /// this partition).
  ParameterPartition(const Manifest &manifest, const MeshContext &mesh);

  /// Whether any parameter is split.
  bool empty() const { return split.empty(); }
  /// The manifest entry of a split parameter; null for any other name.
  const ParameterSpec *splitOf(const std::string &name) const;
  /// The shape this rank holds of `name` (`whole` for an unsplit name).
  std::vector<int64_t> localShape(const std::string &name,
                                  std::vector<int64_t> whole) const;

  /// This rank's part of the whole tensor of `name` (a contiguous copy), or
  /// `whole` itself for an unsplit name. Throws Error "WHERE: parameter 'P'
  /// has shape [..] there, but [..] is split here ..." unless `whole` has the
  /// manifest's whole shape.
  at::Tensor localPart(const std::string &name, const at::Tensor &whole,
                       const std::string &where) const;
  /// Collective over the group of `name`'s mesh axis (every member calls it
  /// for the same names in the same order): the members' parts concatenated
  /// along the split dimension in coordinate order, a new tensor. An unsplit
  /// name, or an axis of size 1: `local` itself.
  at::Tensor gatherWhole(const std::string &name, const at::Tensor &local) const;
  /// Collective: every entry of `store` whole (gatherWhole), in store order.
  ParameterStore wholeStore(const ParameterStore &store) const;

private:
  std::map<std::string, ParameterSpec> split;
  const MeshContext *mesh = nullptr;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_PARAMETERPARTITION_H
