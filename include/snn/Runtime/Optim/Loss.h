//===- Loss.h - Losses and accuracy on the firing rate ----------*- C++ -*-===//
#ifndef SNN_RUNTIME_OPTIM_LOSS_H
#define SNN_RUNTIME_OPTIM_LOSS_H

#include "snn/Runtime/Support/EnumNames.h"

#include <ATen/core/Tensor.h>

#include <string>

namespace snn::runtime {

enum class LossKind {
  /// F.mse_loss(rate, one_hot(y)): mean over N x classes.
  Mse,
  /// F.cross_entropy(rate, y): mean over the batch.
  CrossEntropy,
};

/// --loss's names, also in a checkpoint's settings (do not rename).
inline constexpr EnumNames<LossKind, 2> kLossKindNames{
    "--loss",
    "loss",
    {{{LossKind::Mse, "mse"}, {LossKind::CrossEntropy, "ce"}}}};

/// "mse" or "ce"; throws Error naming --loss otherwise.
inline LossKind parseLossKind(const std::string &name) {
  return kLossKindNames.parse(name);
}
inline const char *lossKindName(LossKind kind) {
  return kLossKindNames.name(kind);
}

/// The class scores [N, classes]: output.mean(0) when the output is
/// time-major [T, N, classes], else the output. Throws Error for any other
/// rank.
at::Tensor firingRate(const at::Tensor &output, bool timeMajor);

/// The scalar loss of `rate` [N, classes] against class indices `labels` [N].
at::Tensor computeLoss(const at::Tensor &rate, const at::Tensor &labels,
                       LossKind kind);

/// How many rows have argmax(rate) == label (the first maximum wins ties).
int64_t countCorrect(const at::Tensor &rate, const at::Tensor &labels);

} // namespace snn::runtime

#endif // SNN_RUNTIME_OPTIM_LOSS_H
