//===- Surrogates.cpp - The surrogate functions of the neurons ------------===//
#include "snn/Schema/Surrogates.h"

#include <cmath>
#include <sstream>

namespace snn::schema {

namespace {

constexpr SurrogateParameter kNone{nullptr, 0.0f, ParameterRange::Finite};

/// What a value of `range` must be, for the error message.
const char *rangeText(ParameterRange range) {
  switch (range) {
  case ParameterRange::Finite:
    return "a finite number";
  case ParameterRange::Positive:
    return "a finite number > 0";
  case ParameterRange::AboveOne:
    return "a finite number > 1";
  case ParameterRange::PositiveInteger:
    return "a whole number >= 1";
  }
  return "";
}

bool inRange(float value, ParameterRange range) {
  if (!std::isfinite(value))
    return false;
  switch (range) {
  case ParameterRange::Finite:
    return true;
  case ParameterRange::Positive:
    return value > 0.0f;
  case ParameterRange::AboveOne:
    return value > 1.0f;
  case ParameterRange::PositiveInteger:
    return value >= 1.0f && value == std::floor(value);
  }
  return false;
}

std::string parameterError(const SurrogateSpec &spec, const SurrogateParameter &parameter,
                           const char *attribute, float value) {
  if (inRange(value, parameter.range))
    return "";
  std::ostringstream out;
  out << spec.name << " surrogate: " << attribute << " (" << parameter.name << ") must be "
      << rangeText(parameter.range) << ", got " << value;
  return out.str();
}

} // namespace

const std::vector<SurrogateSpec> &surrogateSpecs() {
  using R = ParameterRange;
  // SpikingJelly's constructor defaults (activation_based/surrogate.py).
  static const std::vector<SurrogateSpec> specs = {
      {"sigmoid", "Sigmoid", {"alpha", 4.0f, R::Positive}, kNone},
      {"atan", "ATan", {"alpha", 2.0f, R::Positive}, kNone},
      {"piecewise_quadratic", "PiecewiseQuadratic", {"alpha", 1.0f, R::Positive}, kNone},
      {"piecewise_exp", "PiecewiseExp", {"alpha", 1.0f, R::Positive}, kNone},
      {"soft_sign", "SoftSign", {"alpha", 2.0f, R::Positive}, kNone},
      {"super_spike", "SuperSpike", {"alpha", 1.0f, R::Finite}, kNone},
      {"nonzero_sign_log_abs", "NonzeroSignLogAbs", {"alpha", 1.0f, R::Positive}, kNone},
      {"erf", "Erf", {"alpha", 2.0f, R::Finite}, kNone},
      {"piecewise_leaky_relu", "PiecewiseLeakyReLU", {"w", 1.0f, R::Positive},
       {"c", 0.01f, R::Finite}},
      {"squarewave_fourier_series", "SquarewaveFourierSeries", {"n", 2.0f, R::PositiveInteger},
       {"T_period", 8.0f, R::Positive}},
      {"s2nn", "S2NN", {"alpha", 4.0f, R::Finite}, {"beta", 1.0f, R::Finite}},
      {"q_pseudo_spike", "QPseudoSpike", {"alpha", 2.0f, R::AboveOne}, kNone},
      {"leaky_k_relu", "LeakyKReLU", {"leak", 0.0f, R::Finite}, {"k", 1.0f, R::Finite}},
      {"fake_numerical_gradient", "FakeNumericalGradient", {"alpha", 0.3f, R::Finite}, kNone},
      {"log_tailed_relu", "LogTailedReLU", {"alpha", 0.0f, R::Finite}, kNone},
      {"rect", "Rect", {"alpha", 1.0f, R::Positive}, kNone},
  };
  return specs;
}

const SurrogateSpec *findSurrogate(std::string_view name) {
  for (const SurrogateSpec &spec : surrogateSpecs())
    if (name == spec.name)
      return &spec;
  return nullptr;
}

std::string surrogateNames() {
  std::string names;
  for (const SurrogateSpec &spec : surrogateSpecs())
    names += (names.empty() ? "" : ", ") + std::string(spec.name);
  return names;
}

std::string surrogateParameterError(const SurrogateSpec &spec, float alpha, float beta) {
  std::string error = parameterError(spec, spec.alpha, "alpha", alpha);
  if (error.empty() && spec.hasBeta())
    error = parameterError(spec, spec.beta, "beta", beta);
  return error;
}

} // namespace snn::schema
