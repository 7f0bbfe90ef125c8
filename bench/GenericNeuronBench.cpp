//===- GenericNeuronBench.cpp - Described neurons against hand-written ones ===//
//
// The neuron program evaluator (Kernels/GenericNeuronKernels.h) against the
// hand-written fused kernels on the same neurons (IF, LIF, PLIF: what a
// compiler generating the loop could at best reach), and against eager
// PyTorch's per-step ATen ops with autograd (what SpikingJelly runs), for a
// layer [T, neurons]. Prints one row per neuron: the median milliseconds of an
// inference forward and of a training forward + BPTT, and the ratios.
//
//   snn-bench-generic-neurons [--steps 8] [--neurons 262144] [--repeats 15] [--threads 1]
//
//===----------------------------------------------------------------------===//

#include "BenchSupport.h"

#include "snn/Runtime/Kernels/GenericNeuronKernels.h"
#include "snn/Runtime/Kernels/NeuronKernels.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/autograd.h>

#include <cstdio>
#include <functional>
#include <optional>

using namespace snn::runtime;
using snn::schema::NeuronDescription;
using snn::schema::ResetRule;

namespace {

struct Row {
  const char *name;
  NeuronDescription description;
  std::vector<at::Tensor> operands;
  std::optional<NeuronConfig> handWritten; ///< the same neuron's own kernel
  /// One step of eager PyTorch: updates the states, returns the output.
  std::function<at::Tensor(const at::Tensor &, std::vector<at::Tensor> &)> eagerStep;
};

at::Tensor straightThrough(const at::Tensor &u) {
  at::Tensor p = (u * 4.0).sigmoid();
  return (u >= 0).to(at::kFloat) + (p - p.detach());
}

NeuronDescription describe(std::vector<std::string> states, std::vector<double> init,
                           std::vector<std::pair<std::string, double>> constants,
                           std::vector<std::string> charge) {
  NeuronDescription d;
  d.states = std::move(states);
  d.stateInit = std::move(init);
  d.constants = std::move(constants);
  d.charge = std::move(charge);
  d.fire = "h - v_threshold";
  return d;
}

std::vector<Row> rows() {
  std::vector<Row> r;
  NeuronConfig ifConfig, lifConfig, plifConfig;
  ifConfig.kind = NeuronKind::IF;
  lifConfig.kind = NeuronKind::LIF;
  plifConfig.kind = NeuronKind::PLIF;
  std::vector<std::pair<std::string, double>> lif = {
      {"v_threshold", 1.0}, {"v_reset", 0.0}, {"tau", 2.0}};
  r.push_back({"IF",
               describe({"v"}, {0.0}, lif, {"h = v + x"}),
               {},
               ifConfig,
               [](const at::Tensor &x, std::vector<at::Tensor> &st) {
                 at::Tensor h = st[0] + x;
                 at::Tensor s = straightThrough(h - 1.0);
                 st[0] = s * 0.0 + (1.0 - s) * h;
                 return s;
               }});
  r.push_back({"LIF",
               describe({"v"}, {0.0}, lif, {"h = v + (x - (v - v_reset)) / tau"}),
               {},
               lifConfig,
               [](const at::Tensor &x, std::vector<at::Tensor> &st) {
                 at::Tensor h = st[0] + (x - (st[0] - 0.0)) / 2.0;
                 at::Tensor s = straightThrough(h - 1.0);
                 st[0] = s * 0.0 + (1.0 - s) * h;
                 return s;
               }});
  NeuronDescription plif =
      describe({"v"}, {0.0}, lif, {"h = v + (x - (v - v_reset)) * sigmoid(w)"});
  plif.operands = {"w"};
  at::Tensor w = at::zeros({}).requires_grad_(true);
  r.push_back(
      {"PLIF", plif, {w}, plifConfig, [w](const at::Tensor &x, std::vector<at::Tensor> &st) {
         at::Tensor h = st[0] + (x - (st[0] - 0.0)) * w.sigmoid();
         at::Tensor s = straightThrough(h - 1.0);
         st[0] = s * 0.0 + (1.0 - s) * h;
         return s;
       }});
  r.push_back({"QIF",
               describe({"v"}, {-0.1},
                        {{"tau", 2.0},
                         {"v_c", 0.8},
                         {"a0", 1.0},
                         {"v_rest", 0.0},
                         {"v_threshold", 1.0},
                         {"v_reset", -0.1}},
                        {"h = v + (x + a0 * (v - v_rest) * (v - v_c)) / tau"}),
               {},
               std::nullopt,
               [](const at::Tensor &x, std::vector<at::Tensor> &st) {
                 at::Tensor h = st[0] + (x + 1.0 * (st[0] - 0.0) * (st[0] - 0.8)) / 2.0;
                 at::Tensor s = straightThrough(h - 1.0);
                 st[0] = s * -0.1 + (1.0 - s) * h;
                 return s;
               }});
  NeuronDescription izhikevich = describe({"v", "w"}, {-0.1, 0.0},
                                          {{"tau", 2.0},
                                           {"v_c", 0.8},
                                           {"a0", 1.0},
                                           {"v_rest", -0.1},
                                           {"tau_w", 2.0},
                                           {"a", 0.5},
                                           {"b", 0.2},
                                           {"v_threshold", 1.0},
                                           {"v_reset", -0.1}},
                                          {"h = v + (x + a0 * (v - v_rest) * (v - v_c) - w) / tau",
                                           "w = w + (a * (h - v_rest) - w) / tau_w"});
  izhikevich.reset = ResetRule::None;
  izhikevich.update = {"v = (1 - s) * h + s * v_reset", "w = w + b * s"};
  r.push_back({"Izhikevich",
               izhikevich,
               {},
               std::nullopt,
               [](const at::Tensor &x, std::vector<at::Tensor> &st) {
                 at::Tensor h = st[0] + (x + 1.0 * (st[0] + 0.1) * (st[0] - 0.8) - st[1]) / 2.0;
                 at::Tensor w = st[1] + (0.5 * (h + 0.1) - st[1]) / 2.0;
                 at::Tensor s = straightThrough(h - 1.0);
                 st[0] = (1.0 - s) * h + s * -0.1;
                 st[1] = w + 0.2 * s;
                 return s;
               }});
  NeuronDescription cuba =
      describe({"v", "c"}, {0.0, 0.0},
               {{"c_decay", 0.5}, {"v_decay", 0.75}, {"v_threshold", 0.5}, {"v_reset", 0.0}},
               {"c = c * c_decay + x", "h = v * v_decay + c"});
  r.push_back(
      {"CUBALIF", cuba, {}, std::nullopt, [](const at::Tensor &x, std::vector<at::Tensor> &st) {
         st[1] = st[1] * 0.5 + x;
         at::Tensor h = st[0] * 0.75 + st[1];
         at::Tensor s = straightThrough(h - 0.5);
         st[0] = s * 0.0 + (1.0 - s) * h;
         return s;
       }});
  return r;
}

double eagerSeconds(const Row &row, const at::Tensor &x, const at::Tensor &grad, int repeats) {
  at::Tensor leaf = x.clone().requires_grad_(true);
  return snn::bench::medianSeconds(
      [&] {
        std::vector<at::Tensor> st;
        for (double init : row.description.stateInit)
          st.push_back(at::full_like(x[0], init));
        std::vector<at::Tensor> out;
        for (int64_t t = 0; t < x.size(0); ++t)
          out.push_back(row.eagerStep(leaf[t], st));
        torch::autograd::backward({at::stack(out)}, {grad});
      },
      repeats);
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

  std::printf("Neuron layers [T=%lld, %lld neurons], %d threads, Sigmoid surrogate; "
              "milliseconds (median of %d)\n\n",
              (long long)steps, (long long)neurons, at::get_num_threads(), repeats);
  std::printf("| neuron | evaluator infer | hand-written infer | evaluator / hand-written | "
              "evaluator train | hand-written train | evaluator / hand-written | "
              "eager PyTorch train | eager / evaluator |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (const Row &row : rows()) {
    snn::schema::NeuronCompileResult compiled = snn::schema::compileNeuron(row.description);
    if (!compiled.error.empty()) {
      std::fprintf(stderr, "%s: %s\n", row.name, compiled.error.c_str());
      return 1;
    }
    GenericNeuron neuron(compiled.program, row.description.stateInit, Surrogate::Sigmoid, 4.0f,
                         0.0f);
    std::vector<at::Tensor> uniforms;
    {
      at::NoGradGuard noGrad;
      uniforms = neuron.evaluateUniforms(row.operands);
    }
    double infer = snn::bench::medianSeconds(
        [&] { genericNeuronForward(neuron, x, uniforms, false); }, repeats);
    double train = snn::bench::medianSeconds(
        [&] {
          GenericNeuronForwardResult f = genericNeuronForward(neuron, x, uniforms, true);
          genericNeuronBackward(neuron, grad, x, f.states, uniforms);
        },
        repeats);
    double eager = eagerSeconds(row, x, grad, repeats);
    if (row.handWritten) {
      NeuronConfig c = *row.handWritten;
      c.alpha = 4.0f;
      double k = c.kind == NeuronKind::PLIF ? 0.5 : 0.0;
      double handInfer = snn::bench::medianSeconds([&] { neuronForward(x, c, k, false); }, repeats);
      double handTrain = snn::bench::medianSeconds(
          [&] {
            NeuronForwardResult f = neuronForward(x, c, k, true);
            neuronBackward(grad, f.h, x, c, k);
          },
          repeats);
      std::printf("| %s | %.3f | %.3f | %.2f | %.3f | %.3f | %.2f | %.2f | %.1fx |\n", row.name,
                  infer * 1e3, handInfer * 1e3, infer / handInfer, train * 1e3, handTrain * 1e3,
                  train / handTrain, eager * 1e3, eager / train);
    } else {
      std::printf("| %s | %.3f | - | - | %.3f | - | - | %.2f | %.1fx |\n", row.name, infer * 1e3,
                  train * 1e3, eager * 1e3, eager / train);
    }
  }
  return 0;
}
