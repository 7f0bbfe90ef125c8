//===- SpikeLinearBench.cpp - Event-driven Linear against at::linear ------===//
//
// One training call (forward, then backward to the input, the weight and the bias) of a
// Linear layer on random spikes at several densities: the runtime's spike kernels
// (SpikeLinearAutograd.h) against its dense path (threadedLinear, what snn-run runs without
// --spike-linear-density) and at::linear (the call a PyTorch nn.Linear makes), in the same
// process on the same tensors, with snn-run's process settings (one OpenBLAS thread inside
// ATen's --threads). Prints a Markdown table and, per shape, the density below which the spike
// kernels beat the dense path on this machine. x's gradient is a dense GEMM on every path, so
// a call gains at most a third of the dense work.
//
//   snn-bench-spike-linear [--threads N] [--repeats R]
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Autograd/LinearAutograd.h"
#include "snn/Runtime/Autograd/SpikeLinearAutograd.h"
#include "BenchSupport.h"
#include "snn/Runtime/Commands/CommandSupport.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

using snn::bench::medianSeconds;
using snn::bench::parseFlag;

struct Shape {
  int64_t rows, in, out;
};

enum class Path { Spikes, Runtime, Aten };

/// One forward and backward of the layer on `x` along `path`.
void trainingCall(const at::Tensor &x, const at::Tensor &w, const at::Tensor &b,
                  const at::Tensor &grad, Path path) {
  at::Tensor xi = x.detach().requires_grad_(true);
  at::Tensor wi = w.detach().requires_grad_(true), bi = b.detach().requires_grad_(true);
  at::Tensor y = path == Path::Spikes    ? *snn::runtime::spikeLinear(xi, wi, bi, 1.0)
                 : path == Path::Runtime ? snn::runtime::threadedLinear(xi, wi, bi)
                                         : at::linear(xi, wi, bi);
  y.backward(grad);
}

} // namespace

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0) {
      std::printf("usage: snn-bench-spike-linear [--threads N] [--repeats R]\n"
                  "Times one Linear training call on spikes: the runtime's spike kernels "
                  "against at::linear.\n");
      return 0;
    }
  int threads = parseFlag(argc, argv, "--threads", 2);
  int repeats = parseFlag(argc, argv, "--repeats", 15);
  snn::runtime::setIntraOpThreads(threads);
  // T*N rows x in -> out: the CSNN's and the MLP's classifiers, the VGG's 4096-wide ones.
  const Shape shapes[] = {{128, 784, 128}, {256, 2048, 512}, {512, 4096, 1024}};
  const double densities[] = {0.01, 0.03, 0.1, 0.2, 0.3, 0.5};
  at::manual_seed(0);
  std::printf("| rows x in -> out | density | spike kernels ms | dense path ms | at::linear ms "
              "| vs dense path | vs at::linear |\n|---|---|---|---|---|---|---|\n");
  std::vector<std::string> crossovers;
  for (const Shape &s : shapes) {
    at::Tensor w = at::randn({s.out, s.in}), b = at::randn({s.out});
    at::Tensor grad = at::randn({s.rows, s.out});
    double fasterUpTo = 0;
    bool fasterSoFar = true; // at every density up to this one
    for (double density : densities) {
      at::Tensor x = (at::rand({s.rows, s.in}) < density).to(at::kFloat);
      auto time = [&](Path p) {
        return medianSeconds([&] { trainingCall(x, w, b, grad, p); }, repeats);
      };
      double event = time(Path::Spikes), dense = time(Path::Runtime), aten = time(Path::Aten);
      fasterSoFar = fasterSoFar && event < dense;
      if (fasterSoFar)
        fasterUpTo = density;
      std::printf("| %lld x %lld -> %lld | %.2f | %.3f | %.3f | %.3f | %.2fx | %.2fx |\n",
                  (long long)s.rows, (long long)s.in, (long long)s.out, density, event * 1e3,
                  dense * 1e3, aten * 1e3, dense / event, aten / event);
    }
    char line[160];
    std::snprintf(line, sizeof(line), "%lld x %lld -> %lld: spike kernels faster than the dense path up to density %.2f",
                  (long long)s.rows, (long long)s.in, (long long)s.out, fasterUpTo);
    crossovers.push_back(line);
  }
  std::printf("\n%d threads, median of %d calls each\n", at::get_num_threads(), repeats);
  for (const std::string &line : crossovers)
    std::printf("%s\n", line.c_str());
  return 0;
}
