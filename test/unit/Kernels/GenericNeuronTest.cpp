//===- GenericNeuronTest.cpp - Described neurons against kernels and autograd -===//
//
// The neuron program evaluator against (a) the hand-written IF/LIF/PLIF kernels
// on the same descriptions, and (b) SpikingJelly's step functions of the other
// neuron classes written here as per-step ATen ops, differentiated by autograd
// with a straight-through surrogate (Heaviside forward, the Sigmoid
// surrogate's derivative backward).
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include "snn/Runtime/Kernels/GenericNeuronKernels.h"
#include "snn/Runtime/Kernels/NeuronKernels.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <cmath>
#include <functional>
#include <limits>

using namespace snn::runtime;
using snn::schema::NeuronDescription;
using snn::schema::ResetRule;

namespace {

constexpr int64_t kSteps = 8;

GenericNeuron compile(const NeuronDescription &d, Surrogate surrogate = Surrogate::Sigmoid,
                      float alpha = 4.0f, float beta = 0.0f) {
  snn::schema::NeuronCompileResult r = snn::schema::compileNeuron(d);
  EXPECT_EQ(r.error, "");
  return GenericNeuron(r.program, d.stateInit, surrogate, alpha, beta);
}

/// IF, LIF and PLIF as descriptions, in SpikingJelly's expressions.
NeuronDescription describe(const NeuronConfig &c) {
  NeuronDescription d;
  double vr = c.hardReset ? c.vReset : 0.0;
  d.states = {"v"};
  d.stateInit = {vr};
  d.constants = {{"v_threshold", c.vThreshold}, {"v_reset", vr}, {"tau", c.tau}};
  switch (c.kind) {
  case NeuronKind::IF:
    d.charge = {"h = v + x"};
    break;
  case NeuronKind::LIF:
    d.charge = {c.decayInput ? "h = v + (x - (v - v_reset)) / tau"
                             : "h = v - (v - v_reset) / tau + x"};
    break;
  case NeuronKind::PLIF:
    d.operands = {"w"};
    d.charge = {c.decayInput ? "h = v + (x - (v - v_reset)) * sigmoid(w)"
                             : "h = v - (v - v_reset) * sigmoid(w) + x"};
    break;
  }
  d.fire = "h - v_threshold";
  d.reset = c.hardReset ? ResetRule::Hard : ResetRule::Soft;
  d.detachReset = c.detachReset;
  return d;
}

at::Tensor randomInput(at::IntArrayRef shape, uint64_t seed, double low, double high,
                       at::ScalarType dtype) {
  at::manual_seed(seed);
  return (at::rand(shape, at::kDouble) * (high - low) + low).to(dtype);
}

/// Spikes per element-step of `spikes`.
double rate(const at::Tensor &spikes) { return spikes.ne(0).to(at::kDouble).mean().item<double>(); }

/// max |got - want| / max |want|.
double relativeError(const at::Tensor &got, const at::Tensor &want) {
  double scale = want.abs().max().item<double>();
  double error = (got.to(at::kDouble) - want.to(at::kDouble)).abs().max().item<double>();
  return scale > 0 ? error / scale : error;
}

/// Two float32 BPTTs of T steps that differ only in the association of each
/// step's few products and sums: every step adds a few roundings to the
/// gradient carried back, so they agree within about 16 * T float32 epsilons
/// of the gradient's scale.
double bpttBound(int64_t steps) { return 16.0 * double(steps) * 0x1p-23; }

struct HandWrittenCase {
  NeuronConfig config;
  const char *name;
};

NeuronConfig config(NeuronKind kind, bool hard, bool detach, bool decayInput, Surrogate surrogate) {
  NeuronConfig c;
  c.kind = kind;
  c.hardReset = hard;
  c.vReset = hard ? -0.25f : 0.0f;
  c.tau = 1.75f;
  c.decayInput = decayInput;
  c.detachReset = detach;
  c.surrogate = surrogate;
  c.alpha = surrogate == Surrogate::Erf ? 1.5f : 3.0f;
  return c;
}

} // namespace

// The same neuron through the evaluator and through its hand-written kernel:
// identical spikes and states, gradients within the float32 bound.
TEST(GenericNeuron, MatchesTheHandWrittenKernels) {
  std::vector<NeuronConfig> configs = {
      config(NeuronKind::IF, true, false, true, Surrogate::Sigmoid),
      config(NeuronKind::IF, false, true, true, Surrogate::ATan),
      config(NeuronKind::LIF, true, false, true, Surrogate::Sigmoid),
      config(NeuronKind::LIF, false, false, false, Surrogate::Erf),
      config(NeuronKind::LIF, true, true, false, Surrogate::ATan),
      config(NeuronKind::PLIF, true, false, true, Surrogate::Sigmoid),
      config(NeuronKind::PLIF, false, true, false, Surrogate::Sigmoid),
  };
  for (const NeuronConfig &c : configs) {
    SCOPED_TRACE(std::to_string(int(c.kind)) + (c.hardReset ? " hard" : " soft") +
                 (c.detachReset ? " detach" : "") + (c.decayInput ? " decay_input" : ""));
    // IF integrates everything; LIF and PLIF leak toward the input, which must then
    // reach the threshold often enough.
    double high = c.kind == NeuronKind::IF ? 1.5 : c.hardReset ? 2.6 : 1.8;
    at::Tensor x = randomInput({kSteps, 6, 5, 37}, 11, -0.5, high, at::kFloat);
    at::Tensor w = at::full({}, -0.4, at::kFloat);
    GenericNeuron neuron = compile(describe(c), c.surrogate, c.alpha);
    std::vector<at::Tensor> operands;
    if (c.kind == NeuronKind::PLIF)
      operands.push_back(w);
    std::vector<at::Tensor> uniforms = neuron.evaluateUniforms(operands);
    double k = c.kind == NeuronKind::PLIF ? at::sigmoid(w).item<double>() : 0.0;

    NeuronForwardResult want = neuronForward(x, c, k, /*saveH=*/true);
    GenericNeuronForwardResult got = genericNeuronForward(neuron, x, uniforms, true);
    EXPECT_TRUE(at::equal(got.output, want.spikes));
    EXPECT_EQ(got.fired, want.fired);
    double r = rate(got.output);
    EXPECT_GT(r, 0.05);
    EXPECT_LT(r, 0.5);

    at::Tensor g = randomInput(x.sizes(), 12, -1.0, 1.0, at::kFloat);
    NeuronBackwardResult wantGrad = neuronBackward(g, want.h, x, c, k);
    GenericNeuronBackwardResult gotGrad = genericNeuronBackward(neuron, g, x, got.states, uniforms);
    EXPECT_LT(relativeError(gotGrad.gradX, wantGrad.gradX), bpttBound(kSteps));
    if (c.kind == NeuronKind::PLIF) {
      ASSERT_EQ(gotGrad.gradUniforms.size(), 1u);
      double gradW = gotGrad.gradUniforms[0].item<double>() * k * (1.0 - k);
      EXPECT_NEAR(gradW, wantGrad.gradW, bpttBound(kSteps) * std::abs(wantGrad.gradW));
      EXPECT_NE(wantGrad.gradW, 0.0);
    }
  }
}

namespace {

/// A neuron class of SpikingJelly: its description, its operands, and its step as
/// ATen ops (the class's functional step, transcribed from its source).
struct Kind {
  const char *name;
  NeuronDescription description;
  std::function<std::vector<at::Tensor>(at::ScalarType)> operands;
  /// One step: updates `state`, returns {output, spike (undefined if none)}.
  std::function<std::pair<at::Tensor, at::Tensor>(
      const at::Tensor &x, std::vector<at::Tensor> &state, const std::vector<at::Tensor> &operands,
      int64_t t)>
      step;
  double low = -0.5, high = 1.5; ///< input range that makes it fire 5-50 %
};

constexpr double kAlpha = 4.0;

/// Heaviside(u) forward, d sigmoid(alpha u)/du backward.
at::Tensor fire(const at::Tensor &u) {
  at::Tensor smooth = at::sigmoid(u * kAlpha);
  return u.ge(0).to(u.scalar_type()) + (smooth - smooth.detach());
}

at::Tensor hardReset(const at::Tensor &h, const at::Tensor &s, double vReset, bool detach) {
  at::Tensor sd = detach ? s.detach() : s;
  return sd * vReset + (1.0 - sd) * h;
}

NeuronDescription base(std::vector<std::string> states, std::vector<double> init,
                       std::vector<std::pair<std::string, double>> constants,
                       std::vector<std::string> charge, ResetRule reset) {
  NeuronDescription d;
  d.states = std::move(states);
  d.stateInit = std::move(init);
  d.constants = std::move(constants);
  d.charge = std::move(charge);
  d.fire = "h - v_threshold";
  d.reset = reset;
  return d;
}

std::vector<at::Tensor> none(at::ScalarType) { return {}; }

/// round(clamp(u, 0, levels)) forward, the gradient straight through where
/// low <= u <= high (SpikingJelly's MultiLevelSpikeCount).
at::Tensor spikeCount(const at::Tensor &u, double levels, double low, double high) {
  at::Tensor through = u * (u.ge(low) & u.le(high)).to(u.scalar_type());
  return at::round(at::clamp(u, 0.0, levels)).detach() + (through - through.detach());
}

/// ILIFNode (multi-level spike counts, soft reset by the count) and
/// GatedLIFNode (per-channel gates and a per-step [T] conductance).
void addCountingAndGatedKinds(std::vector<Kind> &k) {
  // ILIFNode(tau=4/3, v_threshold=0.75, MultiLevelSpikeCount(3, (0, 2.5)), detach_reset).
  {
    NeuronDescription d =
        base({"v"}, {0.0}, {{"tau", 4.0 / 3.0}, {"vr", 0.0}, {"v_threshold", 0.75}},
             {"h = v - (v - vr) / tau + x"}, ResetRule::None);
    d.fire = "";
    d.update = {"c = spike_count(h / v_threshold, 3, 0, 2.5)", "v = h - detach(c) * v_threshold"};
    d.output = "c";
    k.push_back({"ILIF", d, none,
                 [](const at::Tensor &x, std::vector<at::Tensor> &st, const auto &, int64_t) {
                   at::Tensor &v = st[0];
                   at::Tensor h = v - (v - 0.0) / (4.0 / 3.0) + x;
                   at::Tensor c = spikeCount(h / 0.75, 3.0, 0.0, 2.5);
                   v = h - c.detach() * 0.75;
                   return std::make_pair(c, c);
                 },
                 -1.0, 1.4});
  }
  // GatedLIFNode(T, inplane=None): scalar gates, a [T] conductance.
  {
    NeuronDescription d = base(
        {"v", "last_spike"}, {0.0, 0.0}, {},
        {"i = x * (1 - sigmoid(beta) * (1 - sigmoid(conduct)))",
         "h = ((1 - sigmoid(alpha) * (1 - sigmoid(tau))) * v - (1 - sigmoid(alpha)) * "
         "sigmoid(linear_decay)) + i",
         "h = h - (1 - sigmoid(alpha) * (1 - sigmoid(tau))) * v * sigmoid(gamma) * last_spike - "
         "(1 - sigmoid(gamma)) * sigmoid(v_subreset) * last_spike"},
        ResetRule::None);
    d.fire = "h - sigmoid(v_threshold)";
    d.update = {"last_spike = s"};
    d.operands = {"alpha",       "beta",         "gamma",      "tau",
                  "v_threshold", "linear_decay", "v_subreset", "conduct"};
    d.operandPerStep = {false, false, false, false, false, false, false, true};
    k.push_back({"GatedLIF", d,
                 [](at::ScalarType type) {
                   at::manual_seed(9);
                   std::vector<at::Tensor> ops;
                   for (int i = 0; i < 7; ++i)
                     ops.push_back(at::randn({}, type) * 0.5);
                   ops.push_back(at::randn({kSteps}, type));
                   return ops;
                 },
                 [](const at::Tensor &x, std::vector<at::Tensor> &st,
                    const std::vector<at::Tensor> &op, int64_t t) {
                   at::Tensor &v = st[0], &s = st[1];
                   at::Tensor alpha = at::sigmoid(op[0]), beta = at::sigmoid(op[1]),
                              gamma = at::sigmoid(op[2]), tau = at::sigmoid(op[3]),
                              threshold = at::sigmoid(op[4]), decay = at::sigmoid(op[5]),
                              subreset = at::sigmoid(op[6]), conduct = at::sigmoid(op[7][t]);
                   at::Tensor current = x * (1 - beta * (1 - conduct));
                   at::Tensor h = ((1 - alpha * (1 - tau)) * v - (1 - alpha) * decay) + current;
                   h = h - (1 - alpha * (1 - tau)) * v * gamma * s - (1 - gamma) * subreset * s;
                   s = fire(h - threshold);
                   v = h;
                   return std::make_pair(s, s);
                 },
                 -0.5, 1.5});
  }
}

std::vector<Kind> kinds() {
  std::vector<Kind> k;
  // QIFNode(tau=2, v_c=0.8, a0=1, v_threshold=1, v_rest=0, v_reset=-0.1)
  k.push_back({"QIF",
               base({"v"}, {-0.1},
                    {{"tau", 2.0},
                     {"v_c", 0.8},
                     {"a0", 1.0},
                     {"v_rest", 0.0},
                     {"v_threshold", 1.0},
                     {"v_reset", -0.1}},
                    {"h = v + (x + a0 * (v - v_rest) * (v - v_c)) / tau"}, ResetRule::Hard),
               none, [](const at::Tensor &x, std::vector<at::Tensor> &st, const auto &, int64_t) {
                 at::Tensor &v = st[0];
                 at::Tensor h = v + (x + 1.0 * (v - 0.0) * (v - 0.8)) / 2.0;
                 at::Tensor s = fire(h - 1.0);
                 v = hardReset(h, s, -0.1, false);
                 return std::make_pair(s, s);
               }});
  // EIFNode(tau=2, delta_T=1, theta_rh=0.8, v_threshold=1, v_rest=0, v_reset=-0.1), soft
  {
    NeuronDescription d = base(
        {"v"}, {0.0},
        {{"tau", 2.0}, {"delta_T", 1.0}, {"theta_rh", 0.8}, {"v_rest", 0.0}, {"v_threshold", 1.0}},
        {"h = v + (x + v_rest - v + delta_T * exp((v - theta_rh) / delta_T)) / tau"},
        ResetRule::Soft);
    d.detachReset = true;
    k.push_back({"EIF", d, none,
                 [](const at::Tensor &x, std::vector<at::Tensor> &st, const auto &, int64_t) {
                   at::Tensor &v = st[0];
                   at::Tensor h = v + (x + 0.0 - v + 1.0 * at::exp((v - 0.8) / 1.0)) / 2.0;
                   at::Tensor s = fire(h - 1.0);
                   v = h - s.detach() * 1.0;
                   return std::make_pair(s, s);
                 },
                 -0.5, 1.0});
  }
  // IzhikevichNode: two states; the hard reset keeps the spike's gradient in
  // the v_reset term even under detach_reset; w jumps by b on a spike.
  {
    NeuronDescription d = base({"v", "w"}, {-0.1, 0.0},
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
                                "w = w + (a * (h - v_rest) - w) / tau_w"},
                               ResetRule::None);
    d.update = {"v = (1 - detach(s)) * h + s * v_reset", "w = w + b * s"};
    k.push_back({"Izhikevich", d, none,
                 [](const at::Tensor &x, std::vector<at::Tensor> &st, const auto &, int64_t) {
                   at::Tensor &v = st[0], &w = st[1];
                   at::Tensor h = v + (x + 1.0 * (v - -0.1) * (v - 0.8) - w) / 2.0;
                   at::Tensor wNext = w + (0.5 * (h - -0.1) - w) / 2.0;
                   at::Tensor s = fire(h - 1.0);
                   v = (1.0 - s.detach()) * h + s * -0.1;
                   w = wNext + 0.2 * s;
                   return std::make_pair(s, s);
                 },
                 -0.3, 1.5});
  }
  // CUBALIFNode(c_decay=0.5, v_decay=0.75, v_threshold=0.5, v_reset=0)
  k.push_back({"CUBALIF",
               base({"v", "c"}, {0.0, 0.0},
                    {{"c_decay", 0.5}, {"v_decay", 0.75}, {"v_threshold", 0.5}, {"v_reset", 0.0}},
                    {"c = c * c_decay + x", "h = v * v_decay + c"}, ResetRule::Hard),
               none,
               [](const at::Tensor &x, std::vector<at::Tensor> &st, const auto &, int64_t) {
                 at::Tensor &v = st[0], &c = st[1];
                 c = c * 0.5 + x;
                 at::Tensor h = v * 0.75 + c;
                 at::Tensor s = fire(h - 0.5);
                 v = hardReset(h, s, 0.0, false);
                 return std::make_pair(s, s);
               },
               -0.6, 0.7});
  // KLIFNode(scale_reset=True, tau=2, decay_input=True, soft reset): learnable k.
  {
    NeuronDescription d =
        base({"v"}, {0.0}, {{"tau", 2.0}, {"v_reset", 0.0}, {"v_threshold", 1.0}},
             {"h0 = v + (x - (v - v_reset)) / tau", "h = relu(k * h0)"}, ResetRule::None);
    d.operands = {"k"};
    d.update = {"v = h / k - s * (v_threshold / k)"};
    k.push_back(
        {"KLIF", d,
         [](at::ScalarType type) { return std::vector<at::Tensor>{at::full({}, 1.3, type)}; },
         [](const at::Tensor &x, std::vector<at::Tensor> &st, const std::vector<at::Tensor> &op,
            int64_t) {
           at::Tensor &v = st[0];
           const at::Tensor &kk = op[0];
           at::Tensor h = at::relu(kk * (v + (x - (v - 0.0)) / 2.0));
           at::Tensor s = fire(h - 1.0);
           v = h / kk - s * (at::reciprocal(kk) * 1.0);
           return std::make_pair(s, s);
         }});
  }
  // NonSpikingLIFNode(tau=2): the membrane is the output; no fire, no reset.
  {
    NeuronDescription d =
        base({"v"}, {0.0}, {{"tau", 2.0}}, {"h = v + (x - v) / tau"}, ResetRule::None);
    d.fire = "";
    d.output = "h";
    k.push_back({"NonSpikingLIF", d, none,
                 [](const at::Tensor &x, std::vector<at::Tensor> &st, const auto &, int64_t) {
                   at::Tensor &v = st[0];
                   v = v + (x - v) / 2.0;
                   return std::make_pair(v, at::Tensor());
                 }});
  }
  // LIAFNode(act=ReLU, threshold_related=True): the analog output of a LIF.
  {
    NeuronDescription d = base({"v"}, {0.0}, {{"tau", 2.0}, {"v_reset", 0.0}, {"v_threshold", 1.0}},
                               {"h = v + (x - (v - v_reset)) / tau"}, ResetRule::Hard);
    d.output = "relu(h - v_threshold)";
    k.push_back({"LIAF", d, none,
                 [](const at::Tensor &x, std::vector<at::Tensor> &st, const auto &, int64_t) {
                   at::Tensor &v = st[0];
                   at::Tensor h = v + (x - (v - 0.0)) / 2.0;
                   at::Tensor y = at::relu(h - 1.0);
                   at::Tensor s = fire(h - 1.0);
                   v = hardReset(h, s, 0.0, false);
                   return std::make_pair(y, s);
                 },
                 0.0, 2.5});
  }
  // Per-channel and per-step learnable operands (GatedLIFNode's kind of
  // parameters): a [C] decay and a [T, C] input gate through sigmoids.
  {
    NeuronDescription d = base({"v"}, {0.0}, {{"v_threshold", 0.5}},
                               {"h = v * sigmoid(d) + x * sigmoid(g)"}, ResetRule::Soft);
    d.operands = {"d", "g"};
    k.push_back(
        {"PerChannelGate", d,
         [](at::ScalarType type) {
           at::manual_seed(5);
           return std::vector<at::Tensor>{at::randn({5}, type), at::randn({kSteps, 5}, type)};
         },
         [](const at::Tensor &x, std::vector<at::Tensor> &st, const std::vector<at::Tensor> &op,
            int64_t t) {
           at::Tensor &v = st[0];
           at::Tensor decay = at::sigmoid(op[0]).view({1, 5, 1});
           at::Tensor gate = at::sigmoid(op[1][t]).view({1, 5, 1});
           at::Tensor h = v * decay + x * gate;
           at::Tensor s = fire(h - 0.5);
           v = h - s * 0.5;
           return std::make_pair(s, s);
         },
         -0.5, 1.5});
  }
  addCountingAndGatedKinds(k);
  return k;
}

/// The kind's output over all steps, and its spikes, as ATen ops.
std::pair<at::Tensor, at::Tensor> reference(const Kind &kind, const at::Tensor &x,
                                            const std::vector<at::Tensor> &operands) {
  std::vector<at::Tensor> state;
  for (double init : kind.description.stateInit)
    state.push_back(at::full_like(x[0], init));
  std::vector<at::Tensor> outputs, spikes;
  for (int64_t t = 0; t < x.size(0); ++t) {
    auto [y, s] = kind.step(x[t], state, operands, t);
    outputs.push_back(y);
    if (s.defined())
      spikes.push_back(s);
  }
  return {at::stack(outputs), spikes.empty() ? at::Tensor() : at::stack(spikes)};
}

} // namespace

// Each class's forward in float32 equals its ATen ops (EIF's exp may differ
// by an ulp: its membranes agree to 4 ulps and spikes away from the threshold);
// its BPTT in float64 equals autograd's to rounding.
TEST(GenericNeuron, NeuronClassesMatchTheirStepFunctions) {
  for (const Kind &kind : kinds()) {
    SCOPED_TRACE(kind.name);
    GenericNeuron neuron = compile(kind.description, Surrogate::Sigmoid, float(kAlpha));
    for (at::ScalarType type : {at::kFloat, at::kDouble}) {
      at::Tensor x = randomInput({kSteps, 4, 5, 29}, 21, kind.low, kind.high, type);
      std::vector<at::Tensor> operands = kind.operands(type);
      std::vector<at::Tensor> uniforms = neuron.evaluateUniforms(operands);
      GenericNeuronForwardResult got = genericNeuronForward(neuron, x, uniforms, true);
      auto [wantOutput, wantSpikes] = reference(kind, x, operands);
      if (type == at::kFloat) {
        if (std::string(kind.name) == "EIF") // exp: std::exp here, SLEEF's in ATen
          EXPECT_LE(got.output.ne(wantOutput).sum().item<int64_t>(), 2);
        else
          EXPECT_TRUE(at::equal(got.output, wantOutput));
        if (wantSpikes.defined()) {
          double r = rate(wantSpikes);
          EXPECT_GT(r, 0.05);
          EXPECT_LT(r, 0.5);
          EXPECT_NEAR(double(got.fired), wantSpikes.ne(0).sum().item<double>(),
                      std::string(kind.name) == "EIF" ? 2.0 : 0.0);
        }
        continue;
      }
      // float64: gradients of every input and operand against autograd.
      at::Tensor xr = x.clone().requires_grad_(true);
      std::vector<at::Tensor> opr;
      for (const at::Tensor &o : operands)
        opr.push_back(o.clone().requires_grad_(true));
      at::Tensor output = reference(kind, xr, opr).first;
      at::Tensor g = randomInput(x.sizes(), 22, -1.0, 1.0, type);
      std::vector<at::Tensor> inputs{xr};
      inputs.insert(inputs.end(), opr.begin(), opr.end());
      std::vector<at::Tensor> want = torch::autograd::grad({output}, inputs, {g});

      std::vector<at::Tensor> ops;
      for (const at::Tensor &o : operands)
        ops.push_back(o.clone().requires_grad_(true));
      std::vector<at::Tensor> tracked = neuron.evaluateUniforms(ops);
      GenericNeuronBackwardResult back = genericNeuronBackward(neuron, g, x, got.states, tracked);
      EXPECT_LT(relativeError(back.gradX, want[0]), 1e-12);
      if (!ops.empty()) {
        std::vector<at::Tensor> gradOps =
            torch::autograd::grad(tracked, ops, back.gradUniforms, false, false, true);
        for (size_t i = 0; i < ops.size(); ++i) {
          SCOPED_TRACE(kind.description.operands[i]);
          EXPECT_LT(relativeError(gradOps[i], want[1 + i]), 1e-12);
          EXPECT_GT(want[1 + i].abs().max().item<double>(), 0.0);
        }
      }
    }
  }
}

TEST(GenericNeuron, RejectsUniformsThatDoNotFit) {
  NeuronDescription d = describe(config(NeuronKind::PLIF, true, false, true, Surrogate::Sigmoid));
  GenericNeuron neuron = compile(d);
  at::Tensor x = at::zeros({4, 2, 3}, at::kFloat);
  EXPECT_EQ(snn::test::errorOf([&] { genericNeuronForward(neuron, x, {}, false); }),
            "neuron: 1 uniforms expected, got 0");
  EXPECT_EQ(snn::test::errorOf(
                [&] { genericNeuronForward(neuron, x, {at::zeros({4}, at::kFloat)}, false); }),
            "neuron uniform sigmoid(w) has 4 channels, the input [4, 2, 3] 3");
  EXPECT_EQ(snn::test::errorOf([&] {
              genericNeuronForward(neuron, x, {at::zeros({5, 3}, at::kFloat)}, false);
            }),
            "neuron uniform sigmoid(w) has 5 steps, the input 4");
  EXPECT_EQ(snn::test::errorOf(
                [&] { genericNeuronForward(neuron, x, {at::zeros({}, at::kDouble)}, false); }),
            "neuron uniform sigmoid(w) must be a Float CPU tensor, got Double");
  EXPECT_EQ(snn::test::errorOf([&] { neuron.evaluateUniforms({}); }),
            "neuron: 1 operands expected, got 0");
  EXPECT_EQ(snn::test::errorOf([&] {
              genericNeuronBackward(neuron, at::zeros({4, 2, 2}), x, at::zeros({1, 4, 2, 3}),
                                    {at::zeros({})});
            }),
            "neuron backward: gradient [4, 2, 2], input [4, 2, 3] and saved states "
            "[1, 4, 2, 3] do not match");
}
