//===- Executor.cpp - Runs a program's op list ----------------------------===//

#include "snn/Runtime/Execution/Executor.h"
#include "snn/Runtime/Execution/SpikingBlockFusion.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Schema/ArtifactOps.h"

#include <algorithm>

namespace snn::runtime {

namespace {

std::string arityText(const OpDef &def) {
  if (def.minInputs == def.maxInputs)
    return std::to_string(def.minInputs);
  return std::to_string(def.minInputs) + " to " + std::to_string(def.maxInputs);
}

/// The store's parameters `node` reads, directly or through a value that may
/// be a view of one; records its output as such a view when it may be one.
std::vector<std::string>
parametersRead(const Node &node, const OpDef &def, const ParameterStore *parameters,
               std::map<std::string, std::vector<std::string>> &viewed) {
  std::vector<std::string> used;
  auto addUnique = [&used](const std::string &name) {
    if (std::find(used.begin(), used.end(), name) == used.end())
      used.push_back(name);
  };
  for (const std::string &input : node.inputs) {
    if (parameters && !input.empty() && parameters->contains(input))
      addUnique(input);
    auto it = viewed.find(input);
    if (it != viewed.end())
      for (const std::string &name : it->second)
        addUnique(name);
  }
  if (def.mayViewInput && def.outputs == 1 && !used.empty())
    viewed[node.outputs[0]] = used;
  return used;
}

} // namespace

Executor::Executor(const Graph &graph, const std::string &inputName,
                   const std::string &outputName,
                   const ParameterStore *parameters,
                   const OpRegistry &registry)
    : file(graph.file) {
  auto define = [&](const std::string &value) {
    if (!slots.emplace(value, numSlots).second)
      throw Error(file + ": value '" + value + "' is defined twice");
    return numSlots++;
  };
  for (const auto &initializer : graph.initializers) {
    constants.resize(size_t(numSlots) + 1);
    // The store's tensor itself: optimizer steps and running-statistics
    // updates must reach the next run.
    bool bound = parameters && parameters->contains(initializer.first);
    constants[size_t(define(initializer.first))] =
        bound ? parameters->get(initializer.first) : initializer.second;
  }
  // A pipeline stage after the first has no graph input (its recv nodes
  // produce its values), one before the last no graph output.
  if (!inputName.empty())
    inputSlot = define(inputName);

  // Per value, the parameters it may be a view of.
  std::map<std::string, std::vector<std::string>> viewedParameters;
  for (const Node &node : graph.nodes) {
    const OpDef *def = registry.lookup(node.opType);
    if (!def)
      throw Error(file + ": node '" + node.name + "' has unknown op_type '" +
                  node.opType + "'");
    int arity = int(node.inputs.size());
    if (arity < def->minInputs || arity > def->maxInputs)
      throw Error(file + ": " + node.describe() + " takes " + arityText(*def) +
                  " inputs, got " + std::to_string(arity));
    if (node.outputs.size() != size_t(def->outputs) ||
        (def->outputs == 1 && node.outputs[0].empty()))
      throw Error(file + ": " + node.describe() +
                  (def->outputs == 1 ? " must have one output"
                                     : " must have no outputs"));

    Step step;
    step.description = node.describe();
    std::vector<std::string> used =
        parametersRead(node, *def, parameters, viewedParameters);
    stepParameters.push_back(std::move(used));
    for (size_t i = 0; i < node.inputs.size(); ++i)
      step.inputs.push_back(
          // Optional operands after the first may be absent ("").
          i > 0 && node.inputs[i].empty() ? -1 : slotOf(node.inputs[i], node));
    try {
      step.kernel = def->build(node);
    } catch (const Error &e) {
      throw Error(file + ": " + e.what());
    }
    if (def->outputs == 1)
      step.output = define(node.outputs[0]);
    // A parallel neuron keeps no state, but like a neuron it keeps activations a cut after
    // it saves.
    step.neuron = schema::isStatefulOp(node.opType) || node.opType == schema::op::kParallelNeuron;
    steps.push_back(std::move(step));
  }

  if (!outputName.empty()) {
    auto output = slots.find(outputName);
    if (output == slots.end())
      throw Error(file + ": graph output '" + outputName +
                  "' is not produced by any node");
    outputSlot = output->second;
  }
  constants.resize(size_t(numSlots));
  planReleases();
  planBlocks(graph, outputName);
  planCuts();
}

void Executor::planCuts() {
  // Constants are never live values; the output is live to the end.
  std::vector<int> lastUse = lastReads();
  for (int slot = 0; slot < numSlots; ++slot)
    if (constants[size_t(slot)].defined())
      lastUse[size_t(slot)] = -1;
  if (outputSlot >= 0)
    lastUse[size_t(outputSlot)] = int(steps.size());
  std::vector<bool> insideBlock(steps.size(), false);
  for (const Block &block : blocks)
    for (size_t member = block.first; member + 1 < block.first + block.count; ++member)
      insideBlock[member] = true;
  // Values live between steps: defined and read again later.
  int live = inputSlot >= 0 && lastUse[size_t(inputSlot)] >= 0 ? 1 : 0;
  std::vector<int> diesAfter(steps.size() + 1, 0);
  if (inputSlot >= 0 && lastUse[size_t(inputSlot)] >= 0)
    ++diesAfter[size_t(lastUse[size_t(inputSlot)])];
  bool neuron = false;
  for (size_t i = 0; i + 1 < steps.size(); ++i) {
    neuron = neuron || steps[i].neuron;
    int output = steps[i].output;
    if (output >= 0 && lastUse[size_t(output)] > int(i)) {
      ++live;
      ++diesAfter[size_t(lastUse[size_t(output)])];
    }
    live -= diesAfter[i];
    if (live == 1 && output >= 0 && lastUse[size_t(output)] > int(i) && !insideBlock[i]) {
      cuts.push_back({i, output, neuron});
      neuron = false;
    }
  }
}

void Executor::planBlocks(const Graph &graph, const std::string &outputName) {
  blockAtStep.assign(steps.size(), -1);
  for (SpikingBlockPlan &plan : planSpikingBlocks(graph, outputName)) {
    Block block;
    block.first = plan.first;
    block.count = plan.count;
    block.kernel = std::move(plan.kernel);
    for (const std::string &input : plan.inputs)
      block.inputs.push_back(input.empty() ? -1 : slotOf(input, graph.nodes[plan.first]));
    block.output = slots.at(plan.output);
    blockAtStep[plan.first] = int(blocks.size());
    blocks.push_back(std::move(block));
  }
}

size_t Executor::runBlockAt(size_t index, std::vector<at::Tensor> &values,
                            const RunContext &context) const {
  if (blockAtStep[index] < 0)
    return 0;
  const Block &block = blocks[size_t(blockAtStep[index])];
  std::vector<at::Tensor> arguments;
  for (int slot : block.inputs)
    arguments.push_back(slot >= 0 ? values[size_t(slot)] : at::Tensor());
  at::Tensor result;
  try {
    result = block.kernel(arguments, context);
  } catch (const std::exception &e) {
    throw Error(file + ": " + steps[index].description + ": " + describeException(e));
  }
  if (!result.defined())
    return 0;
  values[size_t(block.output)] = result;
  for (size_t member = index; member < index + block.count; ++member)
    for (int slot : steps[member].release)
      values[size_t(slot)].reset();
  return block.count;
}

int Executor::slotOf(const std::string &value, const Node &user) const {
  auto it = slots.find(value);
  if (it == slots.end())
    throw Error(file + ": " + user.describe() + " uses '" + value +
                "', which no earlier node or initializer defines");
  return it->second;
}

std::vector<int> Executor::lastReads() const {
  std::vector<int> last(size_t(numSlots), -1);
  for (size_t i = 0; i < steps.size(); ++i)
    for (int slot : steps[i].inputs)
      if (slot >= 0)
        last[size_t(slot)] = int(i);
  return last;
}

void Executor::planReleases() {
  // A value dies after its last reader; constants and the output live on.
  std::vector<int> lastUse = lastReads();
  for (int slot = 0; slot < numSlots; ++slot) {
    bool constant = constants[size_t(slot)].defined();
    if (lastUse[size_t(slot)] >= 0 && !constant && slot != outputSlot)
      steps[size_t(lastUse[size_t(slot)])].release.push_back(slot);
  }
}

at::Tensor Executor::run(const at::Tensor &input, bool training,
                         const DataParallelContext *dataParallel,
                         ExecutionObserver *observer,
                         const MeshContext *mesh) const {
  RunContext context;
  context.training = training;
  context.dataParallel = training ? dataParallel : nullptr;
  context.mesh = mesh;
  return run(input, context, observer);
}

at::Tensor Executor::run(const at::Tensor &input, const RunContext &context,
                         ExecutionObserver *observer) const {
  std::vector<at::Tensor> values = constants;
  if (inputSlot >= 0)
    values[size_t(inputSlot)] = input;
  runSteps(0, steps.size(), values, context, observer);
  return outputSlot >= 0 ? values[size_t(outputSlot)] : at::Tensor();
}

void Executor::runSteps(size_t first, size_t end, std::vector<at::Tensor> &values,
                        const RunContext &context, ExecutionObserver *observer) const {
  std::vector<at::Tensor> arguments;
  for (size_t index = first; index < end; ++index) {
    // An observer sees every node: blocks run only without one.
    if (!observer)
      if (size_t covered = runBlockAt(index, values, context)) {
        index += covered - 1;
        continue;
      }
    const Step &step = steps[index];
    if (observer)
      observer->beforeStep(index);
    for (int slot : step.inputs)
      arguments.push_back(slot >= 0 ? values[size_t(slot)] : at::Tensor());
    at::Tensor result;
    try {
      result = step.kernel(arguments, context);
    } catch (const std::exception &e) {
      throw Error(file + ": " + step.description + ": " +
                  describeException(e));
    }
    arguments.clear();
    if (step.output >= 0)
      values[size_t(step.output)] = result;
    if (observer)
      observer->afterStep(index, result);
    // Dropping our handle never frees what autograd saved: saved tensors
    // hold their own references.
    for (int slot : step.release)
      values[size_t(slot)].reset();
  }
}

} // namespace snn::runtime
