//===- ParameterStore.cpp - A model's parameters and buffers --------------===//

#include "snn/Runtime/Execution/ParameterStore.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/TensorIO.h"

#include <ATen/core/grad_mode.h>

namespace snn::runtime {

ParameterStore::ParameterStore(const Manifest &manifest, const Graph &program)
    : ParameterStore(manifest, std::vector<const Graph *>{&program}) {}

ParameterStore::ParameterStore(const Manifest &manifest,
                               const std::vector<const Graph *> &programs) {
  for (const ParameterSpec &spec : manifest.parameters) {
    // A frozen weight is held like a buffer: no gradient, in no optimizer group, so no
    // step (and no weight decay) can change it.
    ParameterKind kind = spec.frozen ? ParameterKind::Buffer : spec.kind;
    const Graph *holder = nullptr;
    for (const Graph *program : programs)
      if (!holder && program->initializers.count(spec.name))
        holder = program;
    if (!holder || index.count(spec.name))
      continue;
    auto it = holder->initializers.find(spec.name);
    Entry entry;
    entry.name = spec.name;
    entry.kind = kind;
    // A private copy: training must not mutate the loaded Artifact, which
    // callers may keep as the pristine starting point.
    entry.tensor = it->second.clone();
    if (kind == ParameterKind::Parameter)
      entry.tensor.requires_grad_(true);
    index.emplace(spec.name, items.size());
    items.push_back(std::move(entry));
  }
}

ParameterStore::ParameterStore(std::vector<Entry> entries) {
  for (Entry &entry : entries) {
    if (!index.emplace(entry.name, items.size()).second)
      throw Error("parameter '" + entry.name + "' is listed twice");
    items.push_back(std::move(entry));
  }
}

std::vector<at::Tensor> ParameterStore::parameters() const {
  std::vector<at::Tensor> result;
  for (const Entry &item : items)
    if (item.kind == ParameterKind::Parameter)
      result.push_back(item.tensor);
  return result;
}

std::vector<std::string> ParameterStore::parameterNames() const {
  std::vector<std::string> result;
  for (const Entry &item : items)
    if (item.kind == ParameterKind::Parameter)
      result.push_back(item.name);
  return result;
}

std::vector<at::Tensor> ParameterStore::buffers() const {
  std::vector<at::Tensor> result;
  for (const Entry &item : items)
    if (item.kind == ParameterKind::Buffer)
      result.push_back(item.tensor);
  return result;
}

bool ParameterStore::contains(const std::string &name) const {
  return index.count(name) != 0;
}

const ParameterStore::Entry &
ParameterStore::entry(const std::string &name) const {
  auto it = index.find(name);
  if (it == index.end())
    throw Error("model has no parameter or buffer '" + name + "'");
  return items[it->second];
}

const at::Tensor &ParameterStore::get(const std::string &name) const {
  return entry(name).tensor;
}

void ParameterStore::set(const std::string &name, const at::Tensor &value) {
  const at::Tensor &target = get(name);
  if (value.sizes() != target.sizes())
    throw Error("parameter '" + name + "' has shape " +
                formatShape(target.sizes()) + ", cannot set it from " +
                formatShape(value.sizes()));
  // In place, so the executor's binding (the same tensor) sees the value;
  // no autograd history on a leaf.
  at::NoGradGuard noGrad;
  target.copy_(value);
}

void ParameterStore::adopt(const std::string &name, const at::Tensor &tensor) {
  auto it = index.find(name);
  if (it == index.end())
    throw Error("'" + name + "' is not a parameter or buffer of the program");
  Entry &item = items[it->second];
  if (!tensor.defined() || tensor.sizes() != item.tensor.sizes() ||
      tensor.scalar_type() != item.tensor.scalar_type())
    throw Error("'" + name + "' has shape " + formatShape(item.tensor.sizes()) +
                " (float32) in the program, the tensor given has " +
                (tensor.defined() ? formatShape(tensor.sizes()) + " (" +
                                        std::string(c10::toString(tensor.scalar_type())) + ")"
                                  : std::string("none")));
  if (item.kind == ParameterKind::Buffer && tensor.requires_grad())
    throw Error("buffer '" + name + "' is given a tensor that requires grad");
  item.tensor = tensor;
}

void ParameterStore::zeroGrad(bool setToNone) {
  for (const Entry &item : items) {
    if (item.kind != ParameterKind::Parameter)
      continue;
    at::Tensor &grad = item.tensor.mutable_grad();
    if (!grad.defined())
      continue;
    if (setToNone)
      grad.reset();
    else
      grad.zero_();
  }
}

} // namespace snn::runtime
