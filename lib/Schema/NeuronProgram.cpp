//===- NeuronProgram.cpp - Compiling a neuron described by its parts ------===//

#include "snn/Schema/NeuronProgram.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

namespace snn::schema {

namespace {

/// One function of the language and the operation it applies.
struct FunctionName {
  const char *name;
  NeuronOp op;
};
constexpr std::array<FunctionName, 5> kFunctions = {{{"exp", NeuronOp::Exp},
                                                     {"sigmoid", NeuronOp::Sigmoid},
                                                     {"relu", NeuronOp::Relu},
                                                     {"tanh", NeuronOp::Tanh},
                                                     {"detach", NeuronOp::Detach}}};

/// Names with a meaning of their own: the input, the spike, the pre-fire potential.
bool reserved(std::string_view name) {
  if (name == "x" || name == "s" || name == "h" || name == "fire" || name == "spike_count")
    return true;
  for (const FunctionName &f : kFunctions)
    if (name == f.name)
      return true;
  return false;
}

bool validName(std::string_view name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
    return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
      return false;
  return true;
}

double fold(NeuronOp op, double a, double b) {
  switch (op) {
  case NeuronOp::Add:
    return a + b;
  case NeuronOp::Sub:
    return a - b;
  case NeuronOp::Mul:
    return a * b;
  case NeuronOp::Div:
    return a / b;
  case NeuronOp::Neg:
    return -a;
  case NeuronOp::Exp:
    return std::exp(a);
  case NeuronOp::Sigmoid:
    return 1.0 / (1.0 + std::exp(-a));
  case NeuronOp::Relu:
    return a > 0.0 ? a : 0.0;
  case NeuronOp::Tanh:
    return std::tanh(a);
  default: // Detach
    return a;
  }
}

std::string formatConstant(double value);

/// Builds the program: a symbol table from names to registers, and a
/// recursive-descent parser of one statement or expression at a time.
class Builder {
public:
  explicit Builder(const NeuronDescription &description) : d_(description) {}

  NeuronCompileResult run();

private:
  // Declarations and the parts of the step, in order; false after an error.
  bool declare();
  bool statements(const std::vector<std::string> &list, const char *part);
  bool statement(const std::string &text);
  bool reset();
  std::optional<int32_t> expression(const std::string &text, size_t start = 0);
  /// The 1-based column of text_[pos_] in the statement.
  std::string column() const { return std::to_string(column_ + pos_ + 1); }

  // The parser over `text_` from `pos_`.
  std::optional<int32_t> parseSum();
  std::optional<int32_t> parseProduct();
  std::optional<int32_t> parseUnary();
  std::optional<int32_t> parsePrimary();
  std::optional<int32_t> parseName();
  std::optional<int32_t> parseSpikeCount();
  /// After ',': a constant expression's value, or nullopt (an error naming `what`).
  std::optional<double> parseConstantArgument(const char *what);
  void skipSpace();
  bool eat(char c);
  std::optional<int32_t> fail(const std::string &message);

  int32_t emit(NeuronInstr instr);
  int32_t constant(double value) { return emit({NeuronOp::Const, -1, -1, -1, value}); }
  int32_t apply(NeuronOp op, int32_t a, int32_t b = -1);
  /// The register `name` reads now, or nullopt (unknown name).
  std::optional<int32_t> lookup(const std::string &name);

  const NeuronDescription &d_;
  NeuronProgram p_;
  std::map<std::string, int32_t> bound_;      // locals and states assigned this step
  std::map<std::string, double> constants_;   // name -> value
  std::map<std::string, int32_t> operands_;   // name -> operand index
  std::map<std::string, int32_t> stateIndex_; // name -> state index
  std::string text_;
  size_t pos_ = 0;
  size_t column_ = 0; // where text_ starts in the statement, for error columns
  std::string error_;
  std::string where_;
};

int32_t Builder::emit(NeuronInstr instr) {
  bool varies = instr.op == NeuronOp::Input || instr.op == NeuronOp::State;
  if (instr.a >= 0 && p_.varies[size_t(instr.a)])
    varies = true;
  if (instr.b >= 0 && p_.varies[size_t(instr.b)])
    varies = true;
  p_.code.push_back(instr);
  p_.varies.push_back(varies);
  return int32_t(p_.code.size() - 1);
}

int32_t Builder::apply(NeuronOp op, int32_t a, int32_t b) {
  const NeuronInstr &ia = p_.code[size_t(a)];
  bool constA = ia.op == NeuronOp::Const;
  bool constB = b < 0 || p_.code[size_t(b)].op == NeuronOp::Const;
  // Python folds arithmetic on two floats in double; Fire of a constant is
  // still a spike decision the backward differentiates, so it stays.
  if (constA && constB && op != NeuronOp::Fire)
    return constant(fold(op, ia.value, b < 0 ? 0.0 : p_.code[size_t(b)].value));
  return emit({op, a, b, -1, 0.0});
}

std::optional<int32_t> Builder::lookup(const std::string &name) {
  if (auto it = bound_.find(name); it != bound_.end())
    return it->second;
  if (auto it = stateIndex_.find(name); it != stateIndex_.end()) {
    int32_t &read = p_.stateRead[size_t(it->second)];
    if (read < 0)
      read = emit({NeuronOp::State, -1, -1, it->second, 0.0});
    return read;
  }
  if (auto it = constants_.find(name); it != constants_.end())
    return constant(it->second);
  if (auto it = operands_.find(name); it != operands_.end()) {
    int32_t &read = p_.operandRead[size_t(it->second)];
    if (read < 0)
      read = emit({NeuronOp::Operand, -1, -1, it->second, 0.0});
    return read;
  }
  if (name == "x")
    return p_.input;
  return std::nullopt;
}

std::optional<int32_t> Builder::fail(const std::string &message) {
  if (error_.empty())
    error_ = where_ + ": " + message;
  return std::nullopt;
}

void Builder::skipSpace() {
  while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])))
    ++pos_;
}

bool Builder::eat(char c) {
  skipSpace();
  if (pos_ < text_.size() && text_[pos_] == c) {
    ++pos_;
    return true;
  }
  return false;
}

std::optional<int32_t> Builder::parseSum() {
  std::optional<int32_t> left = parseProduct();
  while (left) {
    NeuronOp op;
    if (eat('+'))
      op = NeuronOp::Add;
    else if (eat('-'))
      op = NeuronOp::Sub;
    else
      break;
    std::optional<int32_t> right = parseProduct();
    if (!right)
      return std::nullopt;
    left = apply(op, *left, *right);
  }
  return left;
}

std::optional<int32_t> Builder::parseProduct() {
  std::optional<int32_t> left = parseUnary();
  while (left) {
    NeuronOp op;
    if (eat('*'))
      op = NeuronOp::Mul;
    else if (eat('/'))
      op = NeuronOp::Div;
    else
      break;
    std::optional<int32_t> right = parseUnary();
    if (!right)
      return std::nullopt;
    left = apply(op, *left, *right);
  }
  return left;
}

std::optional<int32_t> Builder::parseUnary() {
  if (eat('-')) {
    std::optional<int32_t> operand = parseUnary();
    return operand ? std::optional<int32_t>(apply(NeuronOp::Neg, *operand)) : std::nullopt;
  }
  return parsePrimary();
}

std::optional<int32_t> Builder::parsePrimary() {
  skipSpace();
  if (pos_ >= text_.size())
    return fail("expected a value at the end");
  char c = text_[pos_];
  if (c == '(') {
    ++pos_;
    std::optional<int32_t> inner = parseSum();
    if (inner && !eat(')'))
      return fail("expected ')' at column " + column());
    return inner;
  }
  if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
    double value = 0.0;
    auto [end, ec] = std::from_chars(text_.data() + pos_, text_.data() + text_.size(), value);
    if (ec != std::errc() || !std::isfinite(value))
      return fail("bad number at column " + column());
    pos_ = size_t(end - text_.data());
    return constant(value);
  }
  if (std::isalpha(static_cast<unsigned char>(c)) || c == '_')
    return parseName();
  return fail(std::string("unexpected '") + c + "' at column " + column());
}

std::optional<int32_t> Builder::parseName() {
  size_t start = pos_;
  while (pos_ < text_.size() &&
         (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
    ++pos_;
  std::string name = text_.substr(start, pos_ - start);
  if (name == "spike_count")
    return parseSpikeCount();
  for (const FunctionName &f : kFunctions)
    if (name == f.name) {
      if (!eat('('))
        return fail("'" + name + "' is a function: expected '('");
      std::optional<int32_t> argument = parseSum();
      if (argument && !eat(')'))
        return fail("expected ')' after the argument of '" + name + "'");
      return argument ? std::optional<int32_t>(apply(f.op, *argument)) : std::nullopt;
    }
  if (name == "fire")
    return fail("'fire' is the neuron's fire rule, not a function of its statements");
  std::optional<int32_t> value = lookup(name);
  if (!value)
    return fail("unknown name '" + name + "'");
  return value;
}

std::optional<double> Builder::parseConstantArgument(const char *what) {
  if (!eat(',')) {
    fail(std::string("spike_count: expected ',' before ") + what + " at column " + column());
    return std::nullopt;
  }
  std::optional<int32_t> r = parseSum();
  if (!r)
    return std::nullopt;
  if (p_.code[size_t(*r)].op != NeuronOp::Const) {
    fail(std::string("spike_count: ") + what + " must be a constant");
    return std::nullopt;
  }
  return p_.code[size_t(*r)].value;
}

std::optional<int32_t> Builder::parseSpikeCount() {
  if (!eat('('))
    return fail("'spike_count' is a function: expected '('");
  std::optional<int32_t> argument = parseSum();
  if (!argument)
    return std::nullopt;
  std::optional<double> levels = parseConstantArgument("the spike count D");
  std::optional<double> low =
      levels ? parseConstantArgument("the gradient window's low end") : std::nullopt;
  std::optional<double> high =
      low ? parseConstantArgument("the gradient window's high end") : std::nullopt;
  if (!high)
    return std::nullopt;
  if (!eat(')'))
    return fail("expected ')' after the arguments of 'spike_count'");
  if (!(*levels >= 1.0 && *levels <= 1e6 && *levels == std::floor(*levels)))
    return fail("spike_count: D must be a whole number >= 1, got " + formatConstant(*levels));
  if (!(*low <= *high))
    return fail("spike_count: the gradient window [" + formatConstant(*low) + ", " +
                formatConstant(*high) + "] is empty");
  const NeuronInstr &in = p_.code[size_t(*argument)];
  if (in.op == NeuronOp::Const)
    return constant(std::nearbyint(std::clamp(in.value, 0.0, *levels)));
  if (!p_.varies[size_t(*argument)])
    return fail("spike_count of operands only: it must depend on the input or a state");
  NeuronInstr count{NeuronOp::SpikeCount, *argument, -1, int32_t(*levels), *low};
  count.upper = *high;
  return emit(count);
}

std::optional<int32_t> Builder::expression(const std::string &text, size_t start) {
  text_ = text;
  pos_ = 0;
  column_ = start;
  std::optional<int32_t> value = parseSum();
  skipSpace();
  if (value && pos_ != text_.size())
    return fail("unexpected '" + text_.substr(pos_, 1) + "' at column " + column());
  return value;
}

bool Builder::statement(const std::string &text) {
  size_t equals = text.find('=');
  if (equals == std::string::npos)
    return bool(fail("expected 'name = expression'"));
  std::string name = text.substr(0, equals);
  auto notSpace = [](char c) { return !std::isspace(static_cast<unsigned char>(c)); };
  name.erase(name.begin(), std::find_if(name.begin(), name.end(), notSpace));
  name.erase(std::find_if(name.rbegin(), name.rend(), notSpace).base(), name.end());
  if (!validName(name))
    return bool(fail("'" + name + "' is not a name"));
  if (name == "x" || name == "s" || constants_.count(name) || operands_.count(name))
    return bool(fail("cannot assign '" + name + "': it is " +
                     (name == "x"              ? "the input"
                      : name == "s"            ? "the spike"
                      : constants_.count(name) ? "a constant"
                                               : "an operand")));
  if (reserved(name) && name != "h")
    return bool(fail("'" + name + "' is a function name"));
  std::optional<int32_t> value = expression(text.substr(equals + 1), equals + 1);
  if (!value)
    return false;
  bound_[name] = *value;
  if (auto it = stateIndex_.find(name); it != stateIndex_.end())
    p_.stateNext[size_t(it->second)] = *value;
  return true;
}

bool Builder::statements(const std::vector<std::string> &list, const char *part) {
  for (size_t i = 0; i < list.size(); ++i) {
    where_ = std::string("neuron ") + part + " statement " + std::to_string(i + 1) + " '" +
             list[i] + "'";
    if (!statement(list[i]))
      return false;
  }
  return true;
}

bool Builder::declare() {
  where_ = "neuron description";
  if (d_.states.empty())
    return bool(fail("it has no state (the first state is the membrane)"));
  if (d_.stateInit.size() != d_.states.size())
    return bool(fail(std::to_string(d_.states.size()) + " states but " +
                     std::to_string(d_.stateInit.size()) + " initial values"));
  std::set<std::string> seen;
  auto declareName = [&](const std::string &name, const char *what) {
    if (!validName(name))
      return bool(fail(std::string(what) + " '" + name + "' is not a name"));
    if (reserved(name))
      return bool(fail(std::string(what) + " '" + name + "' is a reserved name"));
    if (!seen.insert(name).second)
      return bool(fail("'" + name + "' is declared twice"));
    return true;
  };
  for (size_t i = 0; i < d_.states.size(); ++i) {
    if (!declareName(d_.states[i], "state") ||
        (!std::isfinite(d_.stateInit[i]) &&
         !fail("state '" + d_.states[i] + "' has a non-finite initial value")))
      return false;
    stateIndex_[d_.states[i]] = int32_t(i);
  }
  for (const auto &[name, value] : d_.constants) {
    if (!declareName(name, "constant") ||
        (!std::isfinite(value) && !fail("constant '" + name + "' is not finite")))
      return false;
    constants_[name] = value;
  }
  for (size_t i = 0; i < d_.operands.size(); ++i) {
    if (!declareName(d_.operands[i], "operand"))
      return false;
    operands_[d_.operands[i]] = int32_t(i);
  }
  return true;
}

bool Builder::reset() {
  where_ = std::string("neuron ") + resetRuleName(d_.reset) + " reset";
  const std::string &membrane = d_.states.front();
  if (d_.reset == ResetRule::None) {
    bound_[membrane] = bound_.at("h");
    p_.stateNext[0] = bound_.at("h");
    return true;
  }
  if (p_.fire < 0)
    return bool(fail("a neuron without a fire rule cannot reset (use reset none)"));
  std::string sd = d_.detachReset ? "detach(s)" : "s";
  std::string rule = d_.reset == ResetRule::Hard ? sd + " * v_reset + (1 - " + sd + ") * h"
                                                 : "h - " + sd + " * v_threshold";
  return statement(membrane + " = " + rule);
}

NeuronCompileResult Builder::run() {
  p_.stateRead.assign(d_.states.size(), -1);
  p_.stateNext.assign(d_.states.size(), -1);
  p_.operandRead.assign(d_.operands.size(), -1);
  p_.input = emit({NeuronOp::Input, -1, -1, -1, 0.0});
  bool ok = declare() && statements(d_.charge, "charge");
  if (ok && !bound_.count("h")) {
    where_ = "neuron charge";
    ok = bool(fail("no statement assigns 'h', the pre-fire potential"));
  }
  if (ok && !d_.fire.empty()) {
    where_ = "neuron fire rule '" + d_.fire + "'";
    std::optional<int32_t> distance = expression(d_.fire);
    if (distance && !p_.varies[size_t(*distance)])
      distance = fail("the fire rule does not depend on the input or a state");
    if (distance) {
      p_.fire = apply(NeuronOp::Fire, *distance);
      bound_["s"] = p_.fire;
    } else {
      ok = false;
    }
  }
  ok = ok && reset() && statements(d_.update, "update");
  if (ok) {
    where_ = "neuron output '" + d_.output + "'";
    std::optional<int32_t> output = expression(d_.output);
    if (output && !p_.varies[size_t(*output)])
      output = fail("the output does not depend on the input or a state");
    ok = bool(output);
    if (ok)
      p_.output = *output;
    p_.spikes = p_.fire >= 0                                                  ? p_.fire
                : ok && p_.code[size_t(p_.output)].op == NeuronOp::SpikeCount ? p_.output
                                                                              : -1;
  }
  for (size_t i = 0; ok && i < d_.states.size(); ++i)
    if (p_.stateNext[i] < 0) // never assigned: carried over
      p_.stateNext[i] = *lookup(d_.states[i]);
  p_.stateNames = d_.states;
  p_.operandNames = d_.operands;
  p_.operandPerStep = d_.operandPerStep;
  p_.operandPerStep.resize(d_.operands.size(), false);
  if (!ok)
    return {NeuronProgram{}, error_};
  return {std::move(p_), ""};
}

std::string formatConstant(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.17g", value);
  return buffer;
}

} // namespace

const char *resetRuleName(ResetRule rule) {
  switch (rule) {
  case ResetRule::Hard:
    return "hard";
  case ResetRule::Soft:
    return "soft";
  case ResetRule::None:
    return "none";
  }
  return "?";
}

bool parseResetRule(std::string_view name, ResetRule &rule) {
  for (ResetRule r : {ResetRule::Hard, ResetRule::Soft, ResetRule::None})
    if (name == resetRuleName(r)) {
      rule = r;
      return true;
    }
  return false;
}

const char *neuronOpName(NeuronOp op) {
  switch (op) {
  case NeuronOp::Const:
    return "const";
  case NeuronOp::Input:
    return "x";
  case NeuronOp::State:
    return "state";
  case NeuronOp::Operand:
    return "operand";
  case NeuronOp::Add:
    return "+";
  case NeuronOp::Sub:
    return "-";
  case NeuronOp::Mul:
    return "*";
  case NeuronOp::Div:
    return "/";
  case NeuronOp::Neg:
    return "-";
  case NeuronOp::Fire:
    return "fire";
  case NeuronOp::SpikeCount:
    return "spike_count";
  default:
    for (const FunctionName &f : kFunctions)
      if (f.op == op)
        return f.name;
  }
  return "?";
}

std::string NeuronProgram::print(int32_t r) const {
  const NeuronInstr &i = code[size_t(r)];
  switch (i.op) {
  case NeuronOp::Const:
    return formatConstant(i.value);
  case NeuronOp::Input:
    return "x";
  case NeuronOp::State:
    return stateNames[size_t(i.index)];
  case NeuronOp::Operand:
    return operandNames[size_t(i.index)];
  case NeuronOp::Add:
  case NeuronOp::Sub:
  case NeuronOp::Mul:
  case NeuronOp::Div:
    return "(" + print(i.a) + " " + neuronOpName(i.op) + " " + print(i.b) + ")";
  case NeuronOp::Neg:
    return "(-" + print(i.a) + ")";
  case NeuronOp::SpikeCount:
    return "spike_count(" + print(i.a) + ", " + std::to_string(i.index) + ", " +
           formatConstant(i.value) + ", " + formatConstant(i.upper) + ")";
  default:
    return std::string(neuronOpName(i.op)) + "(" + print(i.a) + ")";
  }
}

namespace {

/// "name=value" -> (name, value), or an error naming `attribute`.
bool parseNamedValue(const std::string &text, const char *attribute,
                     std::pair<std::string, double> &out, std::string &error) {
  size_t equals = text.find('=');
  double value = 0.0;
  if (equals != std::string::npos) {
    const char *begin = text.data() + equals + 1, *end = text.data() + text.size();
    auto [stop, ec] = std::from_chars(begin, end, value);
    if (ec == std::errc() && stop == end && std::isfinite(value)) {
      out = {text.substr(0, equals), value};
      return true;
    }
  }
  error = std::string("neuron attribute '") + attribute + "': '" + text +
          "' is not 'name=value' with a finite number";
  return false;
}

} // namespace

NeuronDescriptionResult describeNeuron(const NeuronParts &parts) {
  NeuronDescriptionResult result;
  NeuronDescription &d = result.description;
  std::pair<std::string, double> named;
  for (const std::string &text : parts.states) {
    if (!parseNamedValue(text, neuron_attr::kStates, named, result.error))
      return result;
    d.states.push_back(named.first);
    d.stateInit.push_back(named.second);
  }
  for (const std::string &text : parts.constants) {
    if (!parseNamedValue(text, neuron_attr::kConstants, named, result.error))
      return result;
    d.constants.push_back(named);
  }
  if (!parseResetRule(parts.reset, d.reset)) {
    result.error = std::string("neuron attribute '") + neuron_attr::kReset + "': '" + parts.reset +
                   "' is not hard, soft or none";
    return result;
  }
  for (const std::string &spelled : parts.operands) {
    auto [name, perStep] = parseOperandName(spelled);
    d.operands.push_back(name);
    d.operandPerStep.push_back(perStep);
  }
  d.charge = parts.charge;
  d.update = parts.update;
  d.fire = parts.fire;
  d.output = parts.output;
  d.detachReset = parts.detachReset;
  return result;
}

std::pair<std::string, bool> parseOperandName(std::string_view spelled) {
  constexpr std::string_view kPerStep = "[t]";
  if (spelled.size() > kPerStep.size() && spelled.substr(spelled.size() - 3) == kPerStep)
    return {std::string(spelled.substr(0, spelled.size() - 3)), true};
  return {std::string(spelled), false};
}

std::string formatNamedValue(const std::string &name, double value) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return name + "=" + std::string(buffer, ec == std::errc() ? end : buffer);
}

NeuronCompileResult compileNeuron(const NeuronDescription &description) {
  return Builder(description).run();
}

std::string recurrentProgramError(const NeuronProgram &program) {
  for (const NeuronInstr &in : program.code)
    if (in.op == NeuronOp::SpikeCount)
      return "spike_count is not supported in a recurrent neuron";
  return "";
}

} // namespace snn::schema
