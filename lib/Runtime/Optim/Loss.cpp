//===- Loss.cpp - Losses and accuracy on the firing rate ------------------===//
//
// Each function is the ATen call that torch.nn.functional makes, so that the
// loss and its gradient match the PyTorch reference trainer bit for bit.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Optim/Loss.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/TensorIO.h"

#include <ATen/core/Reduction.h>
#include <ATen/ops/argmax.h>
#include <ATen/ops/cross_entropy_loss.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/mse_loss.h>
#include <ATen/ops/one_hot.h>
#include <ATen/ops/sum.h>

namespace snn::runtime {

at::Tensor firingRate(const at::Tensor &output, bool timeMajor) {
  at::Tensor rate = timeMajor ? output.mean(at::IntArrayRef{0}) : output;
  if (rate.dim() != 2)
    throw Error("the model's output " + formatShape(output.sizes()) +
                (timeMajor ? " (time-major)" : "") +
                " does not give class scores [N, classes]");
  return rate;
}

at::Tensor computeLoss(const at::Tensor &rate, const at::Tensor &labels,
                       LossKind kind) {
  if (kind == LossKind::CrossEntropy)
    return at::cross_entropy_loss(rate, labels);
  at::Tensor target = at::one_hot(labels, rate.size(1)).to(rate.scalar_type());
  return at::mse_loss(rate, target, at::Reduction::Mean);
}

int64_t countCorrect(const at::Tensor &rate, const at::Tensor &labels) {
  return at::eq(at::argmax(rate, 1), labels).sum().item<int64_t>();
}

} // namespace snn::runtime
