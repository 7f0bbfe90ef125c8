//===- NeuronMatchTest.cpp - Described IF/LIF/PLIF found, near misses not -===//

#include "snn/Schema/NeuronMatch.h"

#include <gtest/gtest.h>

using namespace snn::schema;

namespace {

std::string text(const KnownNeuron &k) {
  return std::to_string(int(k.kind)) + (k.decayInput ? " decay" : "") +
         (k.detachReset ? " detach" : "") + " vth " + std::to_string(k.vThreshold) +
         (k.vReset ? " vr " + std::to_string(*k.vReset) : " soft") + " tau " +
         std::to_string(k.tau);
}

} // namespace

// Every IF, LIF and PLIF shape, described with its own parameters, is found again with them.
TEST(NeuronMatch, EveryNamedNeuronIsFoundFromItsDescription) {
  int found = 0;
  for (KnownNeuronKind kind : {KnownNeuronKind::IF, KnownNeuronKind::LIF, KnownNeuronKind::PLIF})
    for (bool decayInput : {true, false})
      for (bool detach : {false, true})
        for (std::optional<double> reset :
             {std::optional<double>(-0.25), std::optional<double>()}) {
          if (kind == KnownNeuronKind::IF && !decayInput)
            continue;
          KnownNeuron k;
          k.kind = kind;
          k.decayInput = kind == KnownNeuronKind::IF || decayInput;
          k.detachReset = detach;
          k.vThreshold = 0.75;
          k.vReset = reset;
          k.tau = kind == KnownNeuronKind::LIF ? 1.75 : 2.0;
          SCOPED_TRACE(text(k));
          std::optional<KnownNeuron> got = matchKnownNeuron(describeKnownNeuron(k));
          ASSERT_TRUE(got.has_value());
          EXPECT_EQ(text(*got), text(k));
          ++found;
        }
  EXPECT_EQ(found, 20);
}

TEST(NeuronMatch, NearMissesAreNotNamedNeurons) {
  KnownNeuron lif;
  lif.kind = KnownNeuronKind::LIF;
  lif.vReset = 0.0;
  NeuronDescription d = describeKnownNeuron(lif);
  ASSERT_TRUE(matchKnownNeuron(d).has_value());
  auto misses = [&](auto change) {
    NeuronDescription m = d;
    change(m);
    return !matchKnownNeuron(m).has_value();
  };
  EXPECT_TRUE(misses([](NeuronDescription &m) { m.stateInit = {0.5}; }));
  EXPECT_TRUE(misses([](NeuronDescription &m) { m.charge = {"h = v + (x - v) / tau"}; }));
  EXPECT_TRUE(misses([](NeuronDescription &m) { m.output = "h"; }));
  EXPECT_TRUE(misses([](NeuronDescription &m) { m.fire = "h - v_threshold - 0.125"; }));
  EXPECT_TRUE(misses([](NeuronDescription &m) {
    m.constants = {{"v_threshold", 1.0}, {"v_reset", 0.0}, {"tau", 1.0}}; // LIF needs tau > 1
  }));
  EXPECT_TRUE(misses([](NeuronDescription &m) {
    m.states.push_back("w");
    m.stateInit.push_back(0.0);
  }));
  EXPECT_TRUE(misses([](NeuronDescription &m) { m.update = {"v = v * 0.5"}; }));
  // A soft reset charges with V_reset = 0: a soft LIF leaking toward 0.5 is not one.
  EXPECT_TRUE(misses([](NeuronDescription &m) {
    m.reset = ResetRule::Soft;
    m.constants = {{"v_threshold", 1.0}, {"v_reset", 0.5}, {"tau", 2.0}};
  }));
}
