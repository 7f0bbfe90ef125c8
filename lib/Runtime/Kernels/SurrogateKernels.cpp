//===- SurrogateKernels.cpp - A surrogate's dS/dx over a tensor -----------===//

#include "snn/Runtime/Kernels/SurrogateKernels.h"

#include "NeuronEquations.h"

#include "snn/Runtime/Support/Error.h"

#include <ATen/Parallel.h>
#include <ATen/ops/empty_like.h>

namespace snn::runtime {

namespace {

/// Values per parallel task: enough work to pay for a task.
constexpr int64_t kGrain = 1 << 14;

template <typename T>
void fillGradient(const T *x, T *out, int64_t n, Surrogate surrogate, T alpha, T beta) {
  visitSurrogateMath<T>(surrogate, [&](auto f) {
    at::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        out[i] = f(x[i], alpha, beta);
    });
  });
}

} // namespace

at::Tensor surrogateGradient(const at::Tensor &x, Surrogate surrogate, double alpha, double beta) {
  if (!x.device().is_cpu() || (x.scalar_type() != at::kFloat && x.scalar_type() != at::kDouble))
    throw Error("surrogate gradient: expects a float32 or float64 CPU tensor");
  at::Tensor in = x.contiguous();
  at::Tensor out = at::empty_like(in, at::MemoryFormat::Contiguous);
  if (in.scalar_type() == at::kFloat)
    fillGradient(in.data_ptr<float>(), out.data_ptr<float>(), in.numel(), surrogate, float(alpha),
                 float(beta));
  else
    fillGradient(in.data_ptr<double>(), out.data_ptr<double>(), in.numel(), surrogate, alpha, beta);
  return out;
}

} // namespace snn::runtime
