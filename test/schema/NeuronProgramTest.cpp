//===- NeuronProgramTest.cpp - Neuron descriptions compile or say why -----===//

#include "snn/Schema/NeuronProgram.h"

#include <gtest/gtest.h>

using namespace snn::schema;

namespace {

NeuronDescription lif(ResetRule reset, bool detach) {
  NeuronDescription d;
  d.states = {"v"};
  d.stateInit = {0.0};
  d.constants = {{"tau", 2.0}, {"v_threshold", 1.0}, {"v_reset", 0.0}};
  d.charge = {"h = v + (x - (v - v_reset)) / tau"};
  d.fire = "h - v_threshold";
  d.reset = reset;
  d.detachReset = detach;
  return d;
}

std::string errorOf(const NeuronDescription &d) { return compileNeuron(d).error; }

} // namespace

TEST(NeuronProgram, CompilesTheLIFInPythonsOrder) {
  NeuronCompileResult r = compileNeuron(lif(ResetRule::Hard, true));
  ASSERT_EQ(r.error, "");
  const NeuronProgram &p = r.program;
  EXPECT_EQ(p.print(p.code[size_t(p.fire)].a), "((v + ((x - (v - 0)) / 2)) - 1)");
  EXPECT_EQ(p.print(p.stateNext[0]),
            "((detach(fire(((v + ((x - (v - 0)) / 2)) - 1))) * 0) + ((1 - "
            "detach(fire(((v + ((x - (v - 0)) / 2)) - 1)))) * (v + ((x - (v - 0)) / 2))))");
  EXPECT_EQ(p.output, p.fire);
  EXPECT_TRUE(p.varies[size_t(p.output)]);
}

TEST(NeuronProgram, SoftAndNoReset) {
  NeuronCompileResult soft = compileNeuron(lif(ResetRule::Soft, false));
  ASSERT_EQ(soft.error, "");
  EXPECT_EQ(soft.program.print(soft.program.stateNext[0]),
            "((v + ((x - (v - 0)) / 2)) - (fire(((v + ((x - (v - 0)) / 2)) - 1)) * 1))");
  NeuronDescription integrator = lif(ResetRule::None, false);
  integrator.fire = "";
  integrator.output = "h";
  NeuronCompileResult none = compileNeuron(integrator);
  ASSERT_EQ(none.error, "");
  EXPECT_EQ(none.program.fire, -1);
  EXPECT_EQ(none.program.stateNext[0], none.program.output);
}

TEST(NeuronProgram, FoldsConstantsInDoubleAndKeepsOperandsApart) {
  NeuronDescription d;
  d.states = {"v", "w"};
  d.stateInit = {-0.1, 0.0};
  d.constants = {{"a", 0.1}, {"b", 0.2}, {"v_threshold", 1.0}};
  d.operands = {"k"};
  d.charge = {"h = v + (a + b) * x - sigmoid(k) * w", "w = w + 1"};
  d.fire = "h - 1";
  d.reset = ResetRule::Soft;
  d.output = "s";
  NeuronCompileResult r = compileNeuron(d);
  ASSERT_EQ(r.error, "");
  const NeuronProgram &p = r.program;
  // 0.1 + 0.2 in double is 0.30000000000000004 (a float32 sum would not be).
  EXPECT_EQ(p.print(p.code[size_t(p.fire)].a),
            "(((v + (0.30000000000000004 * x)) - (sigmoid(k) * w)) - 1)");
  int32_t k = p.operandRead[0];
  ASSERT_GE(k, 0);
  EXPECT_FALSE(p.varies[size_t(k)]);
  EXPECT_EQ(p.print(p.stateNext[1]), "(w + 1)");
  EXPECT_TRUE(p.varies[size_t(p.stateNext[1])]);
}

TEST(NeuronProgram, AStateNeverAssignedIsCarried) {
  NeuronDescription d = lif(ResetRule::Hard, false);
  d.states = {"v", "u"};
  d.stateInit = {0.0, 0.5};
  NeuronCompileResult r = compileNeuron(d);
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.program.stateNext[1], r.program.stateRead[1]);
}

TEST(NeuronProgram, ErrorsNameThePartAndTheStatement) {
  NeuronDescription d = lif(ResetRule::Hard, false);
  d.charge = {"h = v + y"};
  EXPECT_EQ(errorOf(d), "neuron charge statement 1 'h = v + y': unknown name 'y'");
  d.charge = {"h = v + (x"};
  EXPECT_EQ(errorOf(d), "neuron charge statement 1 'h = v + (x': expected ')' at column 11");
  d.charge = {"h = v + x)"};
  EXPECT_EQ(errorOf(d), "neuron charge statement 1 'h = v + x)': unexpected ')' at column 10");
  d.charge = {"h v + x"};
  EXPECT_EQ(errorOf(d), "neuron charge statement 1 'h v + x': expected 'name = expression'");
  d.charge = {"tau = x"};
  EXPECT_EQ(errorOf(d),
            "neuron charge statement 1 'tau = x': cannot assign 'tau': it is a constant");
  d.charge = {"g = v + x"};
  EXPECT_EQ(errorOf(d), "neuron charge: no statement assigns 'h', the pre-fire potential");
  d.charge = {"h = v + fire(x)"};
  EXPECT_EQ(errorOf(d), "neuron charge statement 1 'h = v + fire(x)': 'fire' is the neuron's "
                        "fire rule, not a function of its statements");
  d.charge = {"h = v + exp x"};
  EXPECT_EQ(errorOf(d),
            "neuron charge statement 1 'h = v + exp x': 'exp' is a function: expected '('");
  d.charge = {"h = v + x * 1e999"};
  EXPECT_EQ(errorOf(d), "neuron charge statement 1 'h = v + x * 1e999': bad number at column 13");

  d = lif(ResetRule::Hard, false);
  d.charge = {"h = v + x"};
  d.constants.pop_back(); // v_reset
  EXPECT_EQ(errorOf(d), "neuron hard reset: unknown name 'v_reset'");
  d = lif(ResetRule::Soft, false);
  d.fire = "";
  EXPECT_EQ(errorOf(d),
            "neuron soft reset: a neuron without a fire rule cannot reset (use reset none)");
  d = lif(ResetRule::Hard, false);
  d.output = "tau * 2";
  EXPECT_EQ(errorOf(d), "neuron output 'tau * 2': the output does not depend on the input or a "
                        "state");
  d.output = "s + q";
  EXPECT_EQ(errorOf(d), "neuron output 's + q': unknown name 'q'");
}

TEST(NeuronProgram, DeclarationErrors) {
  NeuronDescription d = lif(ResetRule::Hard, false);
  d.states = {};
  d.stateInit = {};
  EXPECT_EQ(errorOf(d), "neuron description: it has no state (the first state is the membrane)");
  d = lif(ResetRule::Hard, false);
  d.stateInit = {0.0, 1.0};
  EXPECT_EQ(errorOf(d), "neuron description: 1 states but 2 initial values");
  d = lif(ResetRule::Hard, false);
  d.operands = {"tau"};
  EXPECT_EQ(errorOf(d), "neuron description: 'tau' is declared twice");
  d.operands = {"s"};
  EXPECT_EQ(errorOf(d), "neuron description: operand 's' is a reserved name");
  d.operands = {"2k"};
  EXPECT_EQ(errorOf(d), "neuron description: operand '2k' is not a name");
  d = lif(ResetRule::Hard, false);
  d.constants.push_back({"c", std::numeric_limits<double>::infinity()});
  EXPECT_EQ(errorOf(d), "neuron description: constant 'c' is not finite");
}

TEST(NeuronProgram, ResetRuleNamesRoundTrip) {
  for (ResetRule rule : {ResetRule::Hard, ResetRule::Soft, ResetRule::None}) {
    ResetRule parsed = ResetRule::Hard;
    EXPECT_TRUE(parseResetRule(resetRuleName(rule), parsed));
    EXPECT_EQ(parsed, rule);
  }
  ResetRule unchanged = ResetRule::Soft;
  EXPECT_FALSE(parseResetRule("subtract", unchanged));
  EXPECT_EQ(unchanged, ResetRule::Soft);
}

TEST(NeuronProgram, PartsReadAsTheAttributesSpellThem) {
  NeuronParts parts;
  parts.states = {"v=-0.1", "w=0"};
  parts.constants = {"tau=2", "v_c=0.80000000000000004", "v_threshold=1", "v_reset=-0.1"};
  parts.charge = {"h = v + (x + (v - v_c) - w) / tau"};
  parts.fire = "h - v_threshold";
  NeuronDescriptionResult r = describeNeuron(parts);
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.description.states, (std::vector<std::string>{"v", "w"}));
  EXPECT_EQ(r.description.stateInit, (std::vector<double>{-0.1, 0.0}));
  EXPECT_EQ(r.description.constants[1].second, 0.8);
  EXPECT_EQ(compileNeuron(r.description).error, "");
  EXPECT_EQ(formatNamedValue("v_c", 0.8), "v_c=0.8");
  EXPECT_EQ(formatNamedValue("tiny", 1e-300), "tiny=1e-300");

  parts.constants = {"tau"};
  EXPECT_EQ(describeNeuron(parts).error,
            "neuron attribute 'constants': 'tau' is not 'name=value' with a finite number");
  parts.constants = {};
  parts.states = {"v=1x"};
  EXPECT_EQ(describeNeuron(parts).error,
            "neuron attribute 'states': 'v=1x' is not 'name=value' with a finite number");
  parts.states = {"v=0"};
  parts.reset = "subtract";
  EXPECT_EQ(describeNeuron(parts).error,
            "neuron attribute 'reset': 'subtract' is not hard, soft or none");
}

TEST(NeuronProgram, SpikeCountIsTheSpikesOfANeuronWithoutAFireRule) {
  NeuronDescription d = lif(ResetRule::None, false);
  d.fire = "";
  d.update = {"c = spike_count(h / v_threshold, 4, 0, 2 * 2)", "v = h - detach(c) * v_threshold"};
  d.output = "c";
  NeuronCompileResult r = compileNeuron(d);
  ASSERT_EQ(r.error, "");
  const NeuronProgram &p = r.program;
  EXPECT_EQ(p.fire, -1);
  EXPECT_EQ(p.spikes, p.output);
  EXPECT_EQ(p.print(p.output), "spike_count(((v + ((x - (v - 0)) / 2)) / 1), 4, 0, 4)");
  // A spike_count of constants folds; a neuron with a fire rule counts its Fire.
  d.update = {"c = spike_count(2.6, 2, 0, 1) * h"};
  NeuronCompileResult folded = compileNeuron(d);
  ASSERT_EQ(folded.error, "");
  EXPECT_EQ(folded.program.print(folded.program.output), "(2 * (v + ((x - (v - 0)) / 2)))");
  EXPECT_EQ(folded.program.spikes, -1);
  NeuronCompileResult fires = compileNeuron(lif(ResetRule::Hard, false));
  EXPECT_EQ(fires.program.spikes, fires.program.fire);
}

TEST(NeuronProgram, SpikeCountErrors) {
  NeuronDescription d = lif(ResetRule::None, false);
  d.fire = "";
  d.operands = {"k"};
  auto updateError = [&](const std::string &statement) {
    d.update = {statement};
    d.output = "c";
    return errorOf(d);
  };
  const std::string where = "neuron update statement 1 '";
  EXPECT_EQ(updateError("c = spike_count(h, 0, 0, 1)"),
            where + "c = spike_count(h, 0, 0, 1)': spike_count: D must be a whole number >= 1, "
                    "got 0");
  EXPECT_EQ(updateError("c = spike_count(h, 2, 1, 0)"),
            where + "c = spike_count(h, 2, 1, 0)': spike_count: the gradient window [1, 0] is "
                    "empty");
  EXPECT_EQ(updateError("c = spike_count(h, x, 0, 1)"),
            where + "c = spike_count(h, x, 0, 1)': spike_count: the spike count D must be a "
                    "constant");
  EXPECT_EQ(updateError("c = spike_count(h, 2)"),
            where + "c = spike_count(h, 2)': spike_count: expected ',' before the gradient "
                    "window's low end at column 21");
  EXPECT_EQ(updateError("c = spike_count(k, 2, 0, 1) + h"),
            where + "c = spike_count(k, 2, 0, 1) + h': spike_count of operands only: it must "
                    "depend on the input or a state");
  EXPECT_EQ(updateError("spike_count = h"), where + "spike_count = h': 'spike_count' is a "
                                                    "function name");
}

TEST(NeuronProgram, PerStepOperandsAreMarkedByT) {
  EXPECT_EQ(parseOperandName("conduct[t]"), std::make_pair(std::string("conduct"), true));
  EXPECT_EQ(parseOperandName("k"), std::make_pair(std::string("k"), false));
  EXPECT_EQ(parseOperandName("[t]"), std::make_pair(std::string("[t]"), false));
  NeuronParts parts;
  parts.states = {"v=0"};
  parts.operands = {"k", "g[t]"};
  NeuronDescriptionResult r = describeNeuron(parts);
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.description.operands, (std::vector<std::string>{"k", "g"}));
  EXPECT_EQ(r.description.operandPerStep, (std::vector<bool>{false, true}));
}
