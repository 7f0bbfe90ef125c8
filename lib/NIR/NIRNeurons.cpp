//===- NIRNeurons.cpp - NIR's neuron primitives as step programs ----------===//
//
// Forward Euler with step dt, each equation written in the neuron language:
//   IF          v' = r I                        h = v + (dt r) x
//   I           v' = r I                        h = v + (dt r) x, output h
//   LI          tau v' = (v_leak - v) + r I     h = v + (r x - (v - v_leak)) / (tau / dt)
//   LIF         LI, then the threshold          as LI, fire h - v_threshold, hard reset
//   CubaLI(F)   tau_syn i' = -i + w_in S        i = i + (w_in x - i) / (tau_syn / dt),
//               then LI(F) driven by r i        h = v + (r i - (v - v_leak)) / (tau_mem / dt)
//   Threshold   H(I - threshold)                h = x, fire h - threshold
//   Delay       O(t) = I(t - delay)             K = delay / dt steps: m = h = x, then the
//                                               chain o = dK, dK = dK-1, ..., d1 = m; output o
// (v_leak - v) + r x and r x - (v - v_leak) are the same float32 number, so the forms are
// NIR's equations to the bit. The synaptic current is updated before the membrane reads it.
// Membranes start at v_leak (IF at v_reset, I at 0), currents at 0.
//
//===----------------------------------------------------------------------===//
#include "snn/NIR/NIRNeurons.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>

using namespace snn::nir;

namespace {

std::string formatNumber(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.17g", value);
  return buffer;
}

/// Reads a node's per-neuron parameters, each one number for every neuron.
class ParameterReader {
public:
  ParameterReader(const NirNode &node, const std::vector<int64_t> &shape)
      : node(node), shape(shape) {}

  /// Parameter `key`, or `fallback` where the node does not have it (none: required).
  std::optional<double> read(const std::string &key, std::optional<double> fallback = {}) {
    const NirArray *array = node.param(key);
    if (!array) {
      if (!fallback)
        fail("has no parameter '" + key + "'");
      return fallback;
    }
    if (array->size() != 1 && array->shape != shape) {
      fail("parameter '" + key + "' has shape " + formatShape(array->shape) +
           ", but its input gives the neurons the shape " + formatShape(shape));
      return std::nullopt;
    }
    if (array->size() == 0 || !std::all_of(array->values.begin(), array->values.end(),
                                           [](double v) { return std::isfinite(v); })) {
      fail("parameter '" + key + "' is not a finite number");
      return std::nullopt;
    }
    if (array->uniform())
      return array->values[0];
    // One value per channel (dim 0 of the neurons' shape), the same over its plane.
    int64_t channels = shape.empty() ? 1 : shape[0];
    size_t plane = size_t(array->size() / channels);
    std::vector<double> values;
    for (int64_t c = 0; c < channels; ++c) {
      values.push_back(array->values[size_t(c) * plane]);
      for (size_t k = 1; k < plane; ++k)
        if (array->values[size_t(c) * plane + k] != values.back()) {
          fail("parameter '" + key + "' differs within channel " + std::to_string(c) +
               " (one value per channel, dim 0 of the neurons' shape, is supported)");
          return std::nullopt;
        }
    }
    varying[key] = values;
    return values[0];
  }

  bool varies(const std::string &key) const { return general || varying.count(key) > 0; }

  /// Write the general forms (h = v + k * x, h = v + (r * x - (v - v_leak)) / tau) even where
  /// the parameters would allow the short ones: what a per-channel description holds.
  bool general = false;

  /// The time constant `key` over the step dt: tau / dt, which must be > 0.
  std::optional<double> steps(const std::string &key, double dt) {
    std::optional<double> tau = read(key);
    auto channels = varying.find(key);
    std::vector<double> all =
        channels != varying.end() ? channels->second : std::vector<double>{tau.value_or(1)};
    for (double value : all)
      if (tau && !(value > 0)) {
        fail("parameter '" + key + "' is " + formatNumber(value) + " (a time constant is > 0)");
        return std::nullopt;
      }
    return tau ? std::optional<double>(*tau / dt) : std::nullopt;
  }

  void fail(const std::string &message) {
    if (error.empty())
      error = message;
  }

  std::string error;
  /// The parameters with one value per channel, by name.
  std::map<std::string, std::vector<double>> varying;

private:
  const NirNode &node;
  const std::vector<int64_t> &shape;
};

std::string constant(const std::string &name, double value) {
  return name + "=" + formatNumber(value);
}

/// h = v + (r * x - (v - v_leak)) / tau, or SpikingJelly's LIF charge where it is the same.
/// `vReset`: the reset potential of a neuron that fires.
std::string leakyCharge(const std::string &drive, double r, double vLeak,
                        std::optional<double> vReset) {
  if (drive == "x" && r == 1.0 && vReset && vLeak == *vReset)
    return "h = v + (x - (v - v_reset)) / tau";
  return "h = v + (r * " + drive + " - (v - v_leak)) / tau";
}

using Describe = std::function<void(ParameterReader &, std::optional<double>, NeuronParts &)>;

void describeIntegrator(ParameterReader &p, double dt, NeuronParts &out, bool fires) {
  std::optional<double> r = p.read("r");
  std::optional<double> vReset = fires ? p.read("v_reset", 0.0) : 0.0;
  std::optional<double> vThreshold = fires ? p.read("v_threshold") : 0.0;
  if (!r || !vReset || !vThreshold)
    return;
  double gain = dt * *r;
  bool unit = gain == 1.0 && !p.varies("r");
  out.states = {constant("v", fires ? *vReset : 0.0)};
  out.charge = {unit ? "h = v + x" : "h = v + k * x"};
  if (!unit)
    out.constants.push_back(constant("k", gain));
  if (fires) {
    out.constants.push_back(constant("v_threshold", *vThreshold));
    out.constants.push_back(constant("v_reset", *vReset));
    out.fire = "h - v_threshold";
    out.reset = "hard";
  } else {
    out.output = "h";
  }
}

/// LI, LIF, CubaLI, CubaLIF: `current` adds the synapse before the membrane.
void describeLeaky(ParameterReader &p, double dt, NeuronParts &out, bool fires, bool current) {
  std::optional<double> tauMem = p.steps(current ? "tau_mem" : "tau", dt);
  std::optional<double> tauSyn = current ? p.steps("tau_syn", dt) : 1.0;
  std::optional<double> wIn = current ? p.read("w_in", 1.0) : 1.0;
  std::optional<double> r = p.read("r");
  std::optional<double> vLeak = p.read("v_leak");
  std::optional<double> vReset = fires ? p.read("v_reset", 0.0) : 0.0;
  std::optional<double> vThreshold = fires ? p.read("v_threshold") : 0.0;
  if (!tauMem || !tauSyn || !wIn || !r || !vLeak || !vReset || !vThreshold)
    return;
  std::string drive = current ? "i" : "x";
  bool uniform = !p.varies("r") && !p.varies("v_reset");
  std::string charge =
      leakyCharge(drive, uniform ? *r : 0.0, *vLeak, fires ? vReset : std::optional<double>());
  bool canonical = charge.find("v_reset") != std::string::npos;
  out.states = {constant("v", *vLeak)};
  if (current) {
    out.states.push_back(constant("i", 0.0));
    out.constants.push_back(constant("tau_syn", *tauSyn));
    out.constants.push_back(constant("w_in", *wIn));
    out.charge.push_back("i = i + (w_in * x - i) / tau_syn");
  }
  out.charge.push_back(charge);
  out.constants.push_back(constant("tau", *tauMem));
  if (!canonical) {
    out.constants.push_back(constant("r", *r));
    out.constants.push_back(constant("v_leak", *vLeak));
  }
  if (!fires) {
    out.output = "h";
    return;
  }
  out.constants.push_back(constant("v_threshold", *vThreshold));
  out.constants.push_back(constant("v_reset", *vReset));
  out.fire = "h - v_threshold";
  out.reset = "hard";
}

/// The longest delay, in steps, a Delay may hold (one state per step).
constexpr int64_t kMaxDelaySteps = 256;

/// Delay by K = delay / dt whole steps: the input goes into state m (the "membrane" the reset
/// none sets to h = x), and along d1 .. dK one step each; the output reads dK before the
/// step moves it, the input of K steps before (0 for the first K steps).
void describeDelayOfSteps(int64_t steps, NeuronParts &out) {
  out.states = {constant("m", 0.0)};
  out.charge = {"h = x"};
  out.reset = "none";
  out.output = steps ? "o" : "h";
  if (steps)
    out.update.push_back("o = d" + std::to_string(steps));
  for (int64_t k = steps; k >= 1; --k) {
    out.states.push_back(constant("d" + std::to_string(k), 0.0));
    out.update.push_back("d" + std::to_string(k) + " = " +
                         (k == 1 ? std::string("m") : "d" + std::to_string(k - 1)));
  }
  std::reverse(out.states.begin() + 1, out.states.end());
}

void describeDelay(ParameterReader &p, double dt, NeuronParts &out) {
  std::optional<double> delay = p.read("delay");
  if (!delay)
    return;
  if (p.varies("delay") && !p.general) {
    p.fail("parameter 'delay' differs between neurons (one delay for all is supported)");
    return;
  }
  double steps = *delay / dt, whole = std::round(steps);
  if (!(steps >= 0) || std::fabs(steps - whole) > 1e-6 * std::max(1.0, whole) ||
      whole > double(kMaxDelaySteps)) {
    char text[64];
    std::snprintf(text, sizeof(text), "delay %g is %g steps", *delay, steps);
    p.fail(std::string(text) + " of --nir-dt; a whole number of steps up to " +
           std::to_string(kMaxDelaySteps) + " is supported");
    return;
  }
  describeDelayOfSteps(int64_t(whole), out);
}

void describeThreshold(ParameterReader &p, NeuronParts &out) {
  std::optional<double> threshold = p.read("threshold");
  if (!threshold)
    return;
  out.states = {constant("v", 0.0)};
  out.constants = {constant("threshold", *threshold)};
  out.charge = {"h = x"};
  out.fire = "h - threshold";
}

/// The parameters that vary per channel become operands [C] of the statements naming the
/// constants they give (tau / dt, dt r, ...); "" or why they cannot.
std::string moveVaryingToOperands(const std::string &type,
                                  const std::map<std::string, std::vector<double>> &varying,
                                  double dt, NeuronParts &parts) {
  if (varying.empty())
    return "";
  for (const char *start : {"v_leak", type == "IF" ? "v_reset" : ""})
    if (varying.count(start))
      return std::string("parameter '") + start +
             "' differs between channels, but the membrane starts at it (one value is "
             "supported)";
  auto same = [](double v) { return v; };
  auto perStep = [dt](double t) { return t / dt; };
  bool cuba = type.rfind("Cuba", 0) == 0;
  const std::map<std::string, std::pair<std::string, std::function<double(double)>>> sources = {
      {"k", {"r", [dt](double r) { return dt * r; }}},
      {"tau", {cuba ? "tau_mem" : "tau", perStep}},
      {"tau_syn", {"tau_syn", perStep}},
      {"r", {"r", same}},
      {"w_in", {"w_in", same}},
      {"v_threshold", {"v_threshold", same}},
      {"v_reset", {"v_reset", same}},
      {"threshold", {"threshold", same}}};
  std::vector<std::string> constants;
  for (const std::string &item : parts.constants) {
    std::string name = item.substr(0, item.find('='));
    auto source = sources.find(name);
    auto values = source == sources.end() ? varying.end() : varying.find(source->second.first);
    if (values == varying.end()) {
      constants.push_back(item);
      continue;
    }
    std::vector<double> operand;
    for (double v : values->second)
      operand.push_back(source->second.second(v));
    parts.operands.push_back(name);
    parts.operandValues.push_back(std::move(operand));
  }
  parts.constants = std::move(constants);
  return "";
}

const std::map<std::string, Describe> &primitives() {
  static const std::map<std::string, Describe> table = {
      {"IF", [](auto &p, auto dt, auto &out) { describeIntegrator(p, *dt, out, true); }},
      {"I", [](auto &p, auto dt, auto &out) { describeIntegrator(p, *dt, out, false); }},
      {"LI", [](auto &p, auto dt, auto &out) { describeLeaky(p, *dt, out, false, false); }},
      {"LIF", [](auto &p, auto dt, auto &out) { describeLeaky(p, *dt, out, true, false); }},
      {"CubaLI", [](auto &p, auto dt, auto &out) { describeLeaky(p, *dt, out, false, true); }},
      {"CubaLIF", [](auto &p, auto dt, auto &out) { describeLeaky(p, *dt, out, true, true); }},
      {"Threshold", [](auto &p, auto, auto &out) { describeThreshold(p, out); }},
      {"Delay", [](auto &p, auto dt, auto &out) { describeDelay(p, *dt, out); }},
  };
  return table;
}

} // namespace

std::string snn::nir::formatShape(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

bool snn::nir::isNeuronPrimitive(const std::string &type) { return primitives().count(type); }

NeuronPartsResult snn::nir::describeNeuronPrimitive(const NirNode &node,
                                                    const std::vector<int64_t> &shape,
                                                    std::optional<double> dt, bool general) {
  NeuronPartsResult result;
  auto it = primitives().find(node.type);
  if (it == primitives().end()) {
    result.error = "is not a neuron primitive";
    return result;
  }
  if (!dt && node.type != "Threshold") {
    // A Delay's steps, like a neuron's equations, need the step.
    result.error = "needs the time step its equations are stepped by, which the file does not "
                   "give: pass --nir-dt SECONDS";
    return result;
  }
  ParameterReader reader(node, shape);
  reader.general = general;
  it->second(reader, dt, result.parts);
  result.error = reader.error;
  if (result.error.empty())
    result.error = moveVaryingToOperands(node.type, reader.varying, dt.value_or(1.0), result.parts);
  return result;
}

namespace {

/// "name=value" strings as a map; false for one that is not.
bool readAssignments(const std::vector<std::string> &items, std::map<std::string, double> &out) {
  for (const std::string &item : items) {
    size_t eq = item.find('=');
    if (eq == std::string::npos)
      return false;
    char *end = nullptr;
    double value = std::strtod(item.c_str() + eq + 1, &end);
    if (end == item.c_str() + eq + 1 || *end != '\0')
      return false;
    out[item.substr(0, eq)] = value;
  }
  return true;
}

bool sameNumbers(const std::vector<std::string> &a, const std::vector<std::string> &b) {
  std::map<std::string, double> x, y;
  if (a.size() != b.size() || !readAssignments(a, x) || !readAssignments(b, y) ||
      x.size() != y.size())
    return false;
  for (const auto &[name, value] : x) {
    auto it = y.find(name);
    if (it == y.end() || std::fabs(it->second - value) > 1e-9 * std::max(1.0, std::fabs(value)))
      return false;
  }
  return true;
}

bool sameParts(const NeuronParts &a, const NeuronParts &b) {
  return a.charge == b.charge && a.update == b.update && a.fire == b.fire && a.reset == b.reset &&
         a.output == b.output && sameNumbers(a.states, b.states) &&
         sameNumbers(a.constants, b.constants);
}

/// The candidate node of `type` whose parameters the constants `c` give, or none.
std::optional<NirNode> candidate(const std::string &type, const std::map<std::string, double> &c,
                                 double dt) {
  NirNode node;
  node.type = type;
  auto get = [&](const char *name, std::optional<double> fallback = {}) {
    auto it = c.find(name);
    return it != c.end() ? std::optional<double>(it->second) : fallback;
  };
  auto set = [&](const char *key, std::optional<double> value) {
    if (value)
      node.params[key] = NirArray{{}, {*value}};
    return value.has_value();
  };
  bool ok = true;
  if (type == "IF" || type == "I") {
    ok = set("r", *get("k", 1.0) / dt);
    if (type == "IF")
      ok = set("v_threshold", get("v_threshold")) && set("v_reset", get("v_reset"));
  } else if (type == "Threshold") {
    ok = set("threshold", get("threshold"));
  } else {
    bool cuba = type.rfind("Cuba", 0) == 0, fires = type.back() == 'F';
    std::optional<double> tau = get("tau");
    ok = tau && set(cuba ? "tau_mem" : "tau", *tau * dt) && set("r", get("r", 1.0)) &&
         set("v_leak", get("v_leak", get("v_reset")));
    if (cuba) {
      std::optional<double> tauSyn = get("tau_syn");
      ok = ok && tauSyn && set("tau_syn", *tauSyn * dt) && set("w_in", get("w_in"));
    }
    if (fires)
      ok = ok && set("v_threshold", get("v_threshold")) && set("v_reset", get("v_reset"));
  }
  return ok ? std::optional<NirNode>(node) : std::nullopt;
}

} // namespace

std::optional<NirNode> snn::nir::matchNeuronPrimitive(const NeuronParts &parts, double dt) {
  std::map<std::string, double> constants;
  if (!readAssignments(parts.constants, constants))
    return std::nullopt;
  // A Delay holds its steps in its states (m and one per step), not in constants.
  if (!parts.states.empty() && parts.states.size() <= size_t(kMaxDelaySteps) + 1) {
    NeuronParts delay;
    describeDelayOfSteps(int64_t(parts.states.size()) - 1, delay);
    if (sameParts(delay, parts)) {
      NirNode node;
      node.type = "Delay";
      node.params["delay"] = NirArray{{}, {double(parts.states.size() - 1) * dt}};
      return node;
    }
  }
  for (const auto &[type, describe] : primitives()) {
    std::optional<NirNode> node = candidate(type, constants, dt);
    if (!node)
      continue;
    for (bool general : {false, true}) {
      NeuronPartsResult described = describeNeuronPrimitive(*node, {}, dt, general);
      if (described.error.empty() && sameParts(described.parts, parts))
        return node;
    }
  }
  return std::nullopt;
}
