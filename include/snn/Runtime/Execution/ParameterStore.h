//===- ParameterStore.h - A model's parameters and buffers ------*- C++ -*-===//
//
// The single owner of a model's state: the manifest's `parameters` entries
// (kind `parameter`: trainable; kind `buffer`: BatchNorm running statistics)
// as LibTorch tensors. The Executor binds its initializer slots to these very
// tensors, not to copies, so an optimizer's in-place update is seen by the
// next forward and BatchNorm's in-place running-statistics update lands here.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_EXECUTION_PARAMETERSTORE_H
#define SNN_RUNTIME_EXECUTION_PARAMETERSTORE_H

#include "snn/Runtime/Execution/Graph.h"
#include "snn/Runtime/Execution/Manifest.h"

#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <vector>

namespace snn::runtime {

class ParameterStore {
public:
  struct Entry {
    std::string name;
    ParameterKind kind = ParameterKind::Parameter;
    /// Parameters have requires_grad = true; buffers do not.
    at::Tensor tensor;
  };

  ParameterStore() = default;

  /// Takes a private copy of every initializer of `program` that the
  /// manifest lists, in manifest order. Entries the program does not hold
  /// (another rank's, in partitioned artifacts) are skipped; initializers the
  /// manifest does not list stay plain constants of the program. Throws Error
  /// for an unknown `kind`.
  ParameterStore(const Manifest &manifest, const Graph &program);
  /// The same over several programs (a pipeline rank's stages): every
  /// listed initializer that any of them holds, in manifest order.
  ParameterStore(const Manifest &manifest,
                 const std::vector<const Graph *> &programs);

  /// A store of the given entries (e.g. whole tensors gathered from a
  /// partitioned run's parts, for writing them out); taken as they are.
  explicit ParameterStore(std::vector<Entry> entries);

  /// Every entry, parameters and buffers, in manifest order.
  const std::vector<Entry> &entries() const { return items; }
  size_t size() const { return items.size(); }

  /// The trainable tensors (kind `parameter`) in manifest order: the one
  /// optimizer group of docs/training.md.
  std::vector<at::Tensor> parameters() const;
  /// Their names, in the same order.
  std::vector<std::string> parameterNames() const;
  /// The buffers (kind `buffer`) in manifest order.
  std::vector<at::Tensor> buffers() const;

  bool contains(const std::string &name) const;
  /// The entry / tensor called `name`; throws Error naming it if unknown.
  const Entry &entry(const std::string &name) const;
  const at::Tensor &get(const std::string &name) const;

  /// Copies `value` into the existing tensor of `name` (in place, without
  /// recording autograd), so the Executor's binding stays valid. Throws Error
  /// if the name is unknown or the shape differs; the dtype is converted.
  void set(const std::string &name, const at::Tensor &value);

  /// Makes `tensor` itself (not a copy) the entry `name`, so a caller that owns the tensors
  /// (the Python API's nn.Parameters) sees the program's updates and gradients on them. Only
  /// before an executor binds the store (Model's constructor takes them). Throws Error if the
  /// name is unknown, the shape or dtype differs, or a buffer's tensor requires grad.
  void adopt(const std::string &name, const at::Tensor &tensor);

  /// Clears the gradients of all parameters (PyTorch's
  /// `zero_grad(set_to_none=True)`): `grad()` is undefined until the next
  /// backward. With `setToNone` false they are zero-filled instead.
  void zeroGrad(bool setToNone = true);

private:
  std::vector<Entry> items;
  std::map<std::string, size_t> index;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_EXECUTION_PARAMETERSTORE_H
