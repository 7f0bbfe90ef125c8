//===- SurrogateBench.cpp - The neuron BPTT with every surrogate ----------===//
//
// The fused BPTT of a LIF layer ([T, neurons], hard reset, decay_input) with
// each surrogate of the table: Sigmoid and ATan in their own inlined loops,
// the others evaluated a step at a time by one loop per kind
// (Kernels/NeuronEquations.h), against the same BPTT in eager PyTorch (the
// per-step ATen ops and autograd a SpikingJelly LIFNode runs) with Sigmoid.
// Prints one row per surrogate: the median milliseconds of a forward (keeping
// H) and a backward, and the ratios to the Sigmoid kernel's and to eager
// PyTorch's forward and backward.
//
//   snn-bench-surrogates [--steps 8] [--neurons 262144] [--repeats 15] [--threads 1]
//
//===----------------------------------------------------------------------===//

#include "BenchSupport.h"

#include "snn/Runtime/Kernels/NeuronKernels.h"
#include "snn/Schema/Surrogates.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/autograd.h>

#include <cstdio>

using namespace snn::runtime;

namespace {

/// Eager PyTorch's LIF over T steps with the Sigmoid surrogate: heaviside plus
/// a straight-through sigmoid term, as SpikingJelly's autograd Function does.
at::Tensor eagerLif(const at::Tensor &x, double alpha) {
  at::Tensor v = at::zeros_like(x[0]);
  std::vector<at::Tensor> spikes;
  for (int64_t t = 0; t < x.size(0); ++t) {
    at::Tensor h = v + (x[t] - v) / 2.0;
    at::Tensor u = h - 1.0;
    at::Tensor p = (u * alpha).sigmoid();
    at::Tensor s = (u >= 0).to(at::kFloat) + (p - p.detach());
    v = (1.0 - s) * h;
    spikes.push_back(s);
  }
  return at::stack(spikes);
}

} // namespace

int main(int argc, char **argv) {
  int64_t steps = snn::bench::parseFlag(argc, argv, "--steps", 8);
  int64_t neurons = snn::bench::parseFlag(argc, argv, "--neurons", 262144);
  int repeats = snn::bench::parseFlag(argc, argv, "--repeats", 15);
  at::set_num_threads(snn::bench::parseFlag(argc, argv, "--threads", 1));
  at::manual_seed(1);
  at::Tensor x = at::rand({steps, neurons}) * 1.5;
  at::Tensor grad = at::randn({steps, neurons});

  at::Tensor leaf = x.clone().requires_grad_(true);
  double eager = snn::bench::medianSeconds(
      [&] {
        leaf.mutable_grad() = at::Tensor();
        at::Tensor s = eagerLif(leaf, 4.0);
        torch::autograd::backward({s}, {grad});
      },
      repeats);

  std::printf("LIF BPTT, T=%lld, %lld neurons per step, %d threads; eager PyTorch (Sigmoid, "
              "forward + backward): %.2f ms\n\n",
              (long long)steps, (long long)neurons, at::get_num_threads(), eager * 1e3);
  std::printf("| surrogate | forward + backward ms | / Sigmoid kernel | eager PyTorch / this |\n");
  std::printf("|---|---|---|---|\n");
  double sigmoid = 0.0;
  const std::vector<snn::schema::SurrogateSpec> &specs = snn::schema::surrogateSpecs();
  for (size_t i = 0; i < specs.size(); ++i) {
    NeuronConfig config;
    config.kind = NeuronKind::LIF;
    config.surrogate = Surrogate(i);
    config.alpha = specs[i].alpha.defaultValue;
    config.beta = specs[i].beta.defaultValue;
    if (config.surrogate == Surrogate::QPseudoSpike || config.alpha == 0.0f)
      config.alpha = 2.0f; // a gradient on both sides of the threshold
    double seconds = snn::bench::medianSeconds(
        [&] {
          NeuronForwardResult forward = neuronForward(x, config, 0.0, /*saveH=*/true);
          neuronBackward(grad, forward.h, at::Tensor(), config, 0.0);
        },
        repeats);
    if (i == 0)
      sigmoid = seconds;
    std::printf("| %s | %.3f | %.2f | %.1fx |\n", specs[i].className, seconds * 1e3,
                seconds / sigmoid, eager / seconds);
  }
  return 0;
}
