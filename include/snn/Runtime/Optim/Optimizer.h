//===- Optimizer.h - SGD, Adam and AdamW as torch.optim ---------*- C++ -*-===//
//
// The update math is torch.optim's single-tensor implementation, op for op
// (docs/training.md), so that a step here equals a step of the PyTorch
// reference trainer. The update works on a list of slices -- a parameter,
// its gradient and its state -- rather than on whole parameters, so that a
// sharded (ZeRO) mode can hand each rank the slices it owns; Optimizer is the
// single-rank owner of whole-parameter slices.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_OPTIM_OPTIMIZER_H
#define SNN_RUNTIME_OPTIM_OPTIMIZER_H

#include "snn/Runtime/Support/EnumNames.h"

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace snn::runtime {

enum class OptimizerKind { Sgd, Adam, AdamW };

/// --optimizer's names, also the kind a checkpoint records (do not rename).
inline constexpr EnumNames<OptimizerKind, 3> kOptimizerKindNames{
    "--optimizer",
    "optimizer",
    {{{OptimizerKind::Sgd, "sgd"},
      {OptimizerKind::Adam, "adam"},
      {OptimizerKind::AdamW, "adamw"}}}};

/// "sgd", "adam" or "adamw"; throws Error naming --optimizer otherwise.
inline OptimizerKind parseOptimizerKind(const std::string &name) {
  return kOptimizerKindNames.parse(name);
}
inline const char *optimizerKindName(OptimizerKind kind) {
  return kOptimizerKindNames.name(kind);
}

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::Sgd;
  /// SGD momentum (dampening 0, no Nesterov); 0 keeps no buffer.
  double momentum = 0.0;
  /// Coupled L2 for sgd/adam, decoupled decay for adamw.
  double weightDecay = 0.0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
};

/// PyTorch's default weight decay of each optimizer (AdamW: 0.01).
double defaultWeightDecay(OptimizerKind kind);

/// State tensors the optimizer keeps per parameter: 0 for SGD, 1 with momentum (its
/// buffer), 2 for Adam and AdamW (exp_avg, exp_avg_sq); what the planner's
/// optimizer-states counts.
int64_t optimizerStatesOf(const OptimizerConfig &config);

/// The state of one parameter or slice, named as in torch.optim's
/// state_dict: `step`, `momentum_buffer`, `exp_avg`, `exp_avg_sq`.
struct ParamState {
  /// Updates applied so far (Adam's bias correction).
  int64_t step = 0;
  /// SGD with momentum; undefined until the first update.
  at::Tensor momentumBuffer;
  /// Adam and AdamW; undefined until the first update.
  at::Tensor expAvg;
  at::Tensor expAvgSq;
};

/// One parameter, or a slice of one (a view into its storage).
struct UpdateSlice {
  at::Tensor param; // updated in place
  at::Tensor grad;  // undefined: skipped, as torch.optim skips grad None
  ParamState *state = nullptr;
};

/// Applies one step with learning rate `lr` to every slice, without
/// recording autograd.
void applyUpdate(const OptimizerConfig &config, double lr,
                 const std::vector<UpdateSlice> &slices);

/// The defined state tensors of `state` by torch.optim name.
std::vector<std::pair<std::string, at::Tensor>>
namedStateTensors(const ParamState &state);

/// Sets the state tensor called `name`; throws Error for an unknown name.
void setStateTensor(ParamState &state, const std::string &name,
                    const at::Tensor &value);

/// One parameter group over whole parameters (single rank).
class Optimizer {
public:
  Optimizer(const OptimizerConfig &config, std::vector<std::string> names,
            std::vector<at::Tensor> params);

  /// Updates every parameter from its `grad()` with learning rate `lr`.
  void step(double lr);

  const OptimizerConfig &config() const { return cfg; }
  const std::vector<std::string> &names() const { return paramNames; }
  const std::vector<at::Tensor> &params() const { return tensors; }
  std::vector<ParamState> &states() { return paramStates; }
  const std::vector<ParamState> &states() const { return paramStates; }

private:
  OptimizerConfig cfg;
  std::vector<std::string> paramNames;
  std::vector<at::Tensor> tensors;
  std::vector<ParamState> paramStates;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_OPTIM_OPTIMIZER_H
