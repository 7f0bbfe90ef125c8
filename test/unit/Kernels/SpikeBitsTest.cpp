//===- SpikeBitsTest.cpp - Spike inputs kept as bits ----------------------===//
//
// Packing is lossless for spikes and refuses anything else (a value that
// would not come back as itself); a conv2d that keeps its spike input as
// bits gives autograd's gradients bit for bit.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Autograd/ConvAutograd.h"
#include "snn/Runtime/Kernels/NeuronKernels.h"
#include "snn/Runtime/Kernels/SpikeBits.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <limits>

using namespace snn::runtime;

TEST(SpikeBits, PackingIsLosslessAtEveryDensityAndSize) {
  at::manual_seed(5);
  for (int64_t n : {1, 7, 8, 9, 1000, 65537})
    for (double density : {0.0, 0.03, 0.5, 1.0}) {
      SCOPED_TRACE(::testing::Message() << n << " values at density " << density);
      at::Tensor x = (at::rand({n}) < density).to(at::kFloat);
      ASSERT_TRUE(isSpikeTensor(x));
      at::Tensor bits = packSpikeBits(x);
      EXPECT_EQ(bits.numel(), (n + 7) / 8);
      EXPECT_TRUE(at::equal(unpackSpikeBits(bits, x.sizes()), x));
    }
}

TEST(SpikeBits, EveryInstructionSetPacksTheSameBytesAndRefusesNonSpikes) {
  at::manual_seed(6);
  KernelIsa best = neuronKernelIsa();
  at::Tensor x = (at::rand({70001}) < 0.3).to(at::kFloat);
  std::vector<at::Tensor> packed;
  for (KernelIsa isa : {KernelIsa::Baseline, KernelIsa::Avx2}) {
    if (!setNeuronKernelIsa(isa))
      continue;
    SCOPED_TRACE(isa == KernelIsa::Avx2 ? "avx2" : "baseline");
    packed.push_back(packSpikeBits(x));
    EXPECT_TRUE(at::equal(unpackSpikeBits(packed.back(), x.sizes()), x));
    // A value that is not a spike, in the vector body or the tail.
    for (int64_t at : {int64_t(0), int64_t(12345), int64_t(69999), int64_t(70000)})
      for (float odd : {0.5f, -0.0f, std::numeric_limits<float>::quiet_NaN()}) {
        at::Tensor y = x.clone();
        y[at] = odd;
        EXPECT_FALSE(packSpikeBitsIfSpikes(y).has_value()) << at << " " << odd;
      }
  }
  setNeuronKernelIsa(best);
  for (const at::Tensor &bytes : packed)
    EXPECT_TRUE(at::equal(bytes, packed.front()));
}

TEST(SpikeBits, OnlyZerosAndOnesAreSpikes) {
  at::Tensor x = at::zeros({4, 9});
  x[1][2] = 1.0f;
  EXPECT_TRUE(isSpikeTensor(x));
  for (float odd : {0.5f, 2.0f, -1.0f, -0.0f, std::numeric_limits<float>::quiet_NaN()}) {
    at::Tensor y = x.clone();
    y[3][8] = odd;
    EXPECT_FALSE(isSpikeTensor(y)) << odd;
  }
  EXPECT_FALSE(isSpikeTensor(x.t()));                // not dense
  EXPECT_FALSE(isSpikeTensor(x.to(at::kDouble)));    // not float32
}

TEST(SpikeBits, ConvKeepingBitsGivesAutogradsGradients) {
  at::manual_seed(9);
  at::Tensor spikes = (at::rand({6, 3, 9, 8}) < 0.2).to(at::kFloat);
  at::Tensor weight = at::randn({5, 3, 3, 3}), bias = at::randn({5});
  Conv2dShape shape{{1, 2}, {1, 0}, {1, 1}, 1};
  at::Tensor upstream;
  auto gradients = [&](bool bits) {
    at::Tensor x = spikes.clone().requires_grad_(true);
    at::Tensor w = weight.clone().requires_grad_(true), b = bias.clone().requires_grad_(true);
    at::Tensor y = bits ? conv2dSavingSpikeBits(x, packSpikeBits(x), w, b, shape)
                        : at::conv2d(x, w, b, shape.stride, shape.padding, shape.dilation,
                                     shape.groups);
    if (!upstream.defined())
      upstream = at::randn(y.sizes());
    (y * upstream).sum().backward();
    return std::vector<at::Tensor>{y.detach(), x.grad(), w.grad(), b.grad()};
  };
  // ATen sets its threads up at the first parallel_for of a thread (the
  // bit-keeping path's unpacking), and oneDNN's weight-gradient reduction
  // depends on the threads it sees: both paths must run after that, as in
  // snn-run, which sets its threads before anything.
  at::init_num_threads();
  std::vector<at::Tensor> expected = gradients(false), actual = gradients(true);
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_TRUE(at::equal(actual[i], expected[i])) << "output, x, weight, bias: " << i;
  EXPECT_GT(expected[2].abs().max().item<double>(), 0.0);
}
