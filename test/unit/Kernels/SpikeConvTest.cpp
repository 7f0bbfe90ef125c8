//===- SpikeConvTest.cpp - The event-driven conv2d vs the dense one -------===//
//
// On random spike patterns at densities 0 to 1, strides, paddings, dilations
// and a bias or none, the event-driven conv2d equals at::conv2d within the
// float32 bound of the same sums in any order (TestSupport.h): the terms are
// the weights of the active taps, so |W| conv x bounds their absolute sum.
// In training, its gradients (the weight's over the active inputs, from
// bits) equal autograd's through at::conv2d within their sums' bounds.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include "snn/Runtime/Autograd/ConvAutograd.h"
#include "snn/Runtime/Kernels/SpikeBits.h"
#include "snn/Runtime/Kernels/SpikeConvKernels.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

using namespace snn::runtime;

namespace {

/// A layer the tests run: channels in and out and the kernel's size, with the
/// geometry. Output counts above 64 take several blocks of the kernels, the
/// last one partly past O, and 64 fills whole blocks (the weight gradient
/// then reads a channels-last gradient in place); 3 x 3 and 1 x 1 have their
/// own weight-gradient kernels, other sizes the general one.
struct Layer {
  SpikeConvGeometry g;
  int64_t channels, outputs, kernel;
};

std::vector<Layer> layers() {
  return {{{{1, 1}, {1, 1}, {1, 1}}, 5, 7, 3},   {{{2, 1}, {0, 2}, {1, 2}}, 5, 7, 3},
          {{{1, 1}, {0, 0}, {1, 1}}, 5, 7, 1},   {{{1, 1}, {1, 1}, {1, 1}}, 20, 70, 3},
          {{{2, 2}, {0, 0}, {1, 1}}, 20, 70, 1}, {{{2, 2}, {2, 2}, {1, 1}}, 12, 33, 5},
          {{{1, 1}, {1, 1}, {1, 1}}, 9, 64, 3}};
}

/// Runs `body` once on each version of the kernels this CPU can run.
template <typename Body> void onEachInstructionSet(Body body) {
  const SpikeConvInstructions best = bestSpikeConvInstructions();
  for (SpikeConvInstructions set : {SpikeConvInstructions::Baseline, SpikeConvInstructions::Avx2,
                                    SpikeConvInstructions::Avx512}) {
    if (static_cast<int>(set) > static_cast<int>(best))
      break;
    SCOPED_TRACE(::testing::Message() << "instruction set " << static_cast<int>(set));
    useSpikeConvInstructions(set);
    body();
  }
  useSpikeConvInstructions(best);
}

} // namespace

TEST(SpikeConv, EqualsTheDenseConvolutionAtEveryDensity) {
  at::manual_seed(11);
  onEachInstructionSet([] {
    for (const Layer &l : layers())
      for (double density : {0.0, 0.05, 0.2, 0.5, 1.0})
        for (bool withBias : {false, true})
          for (bool channelsLast : {false, true}) {
            SCOPED_TRACE(::testing::Message()
                         << l.channels << " -> " << l.outputs << " kernel " << l.kernel
                         << " stride " << l.g.stride[0] << " density " << density
                         << (withBias ? " bias" : "") << (channelsLast ? " NHWC" : ""));
            at::Tensor x = (at::rand({3, l.channels, 11, 9}) < density).to(at::kFloat);
            if (channelsLast)
              x = x.contiguous(at::MemoryFormat::ChannelsLast);
            at::Tensor w = at::randn({l.outputs, l.channels, l.kernel, l.kernel});
            at::Tensor b = withBias ? at::randn({l.outputs}) : at::Tensor();
            std::optional<double> measured = spikeDensity(x);
            ASSERT_TRUE(measured.has_value());
            EXPECT_NEAR(*measured, density, 0.1);
            at::Tensor expected = at::conv2d(x, w, b, l.g.stride, l.g.padding, l.g.dilation);
            at::Tensor actual = spikeConv2dForward(x, w, b, l.g);
            ASSERT_EQ(actual.sizes(), expected.sizes());
            // The output keeps the input's memory format, as a dense
            // convolution's does.
            EXPECT_EQ(actual.is_contiguous(at::MemoryFormat::ChannelsLast), channelsLast);
            at::Tensor magnitude = at::conv2d(x.to(at::kDouble), w.abs().to(at::kDouble),
                                              withBias ? b.abs().to(at::kDouble) : at::Tensor(),
                                              l.g.stride, l.g.padding, l.g.dilation);
            int64_t terms = l.channels * l.kernel * l.kernel + 1;
            snn::test::expectSameSumUpToOrder(actual, expected, magnitude, terms);
          }
  });
}

TEST(SpikeConv, OnlySpikeInputsHaveADensity) {
  at::Tensor x = at::zeros({2, 3, 4, 4});
  x[0][1][2][3] = 1.0f;
  ASSERT_TRUE(spikeDensity(x).has_value());
  EXPECT_DOUBLE_EQ(*spikeDensity(x), 1.0 / 96.0);
  x[1][0][0][0] = 0.5f;
  EXPECT_FALSE(spikeDensity(x).has_value());
  EXPECT_FALSE(spikeDensity(at::zeros({4, 5}).t()).has_value()); // not dense
}

// The training path: x's, the weight's and the bias's gradients of the
// event-driven conv2d (weight gradient over the active inputs, from bits)
// against autograd through at::conv2d, within the float32 bound of each
// gradient's sum (weight: B*OH*OW terms |g| over the fired inputs).
TEST(SpikeConv, GradientsEqualTheDenseConvolutionsAtEveryDensity) {
  at::init_num_threads();
  at::manual_seed(12);
  onEachInstructionSet([] {
    for (const Layer &l : layers())
      for (double density : {0.0, 0.05, 0.2, 0.5, 1.0})
        for (bool channelsLast : {false, true}) {
          SCOPED_TRACE(::testing::Message()
                       << l.channels << " -> " << l.outputs << " kernel " << l.kernel << " stride "
                       << l.g.stride[0] << " density " << density << (channelsLast ? " NHWC" : ""));
          at::Tensor spikes = (at::rand({6, l.channels, 11, 9}) < density).to(at::kFloat);
          if (channelsLast)
            spikes = spikes.contiguous(at::MemoryFormat::ChannelsLast);
          at::Tensor w = at::randn({l.outputs, l.channels, l.kernel, l.kernel});
          at::Tensor b = at::randn({l.outputs});
          at::Tensor xa = spikes.clone().requires_grad_(true), wa = w.clone().requires_grad_(true),
                     ba = b.clone().requires_grad_(true);
          at::Tensor xb = spikes.clone().requires_grad_(true), wb = w.clone().requires_grad_(true),
                     bb = b.clone().requires_grad_(true);
          Conv2dShape s{l.g.stride, l.g.padding, l.g.dilation, 1};
          at::Tensor expected = at::conv2d(xa, wa, ba, s.stride, s.padding, s.dilation);
          at::Tensor actual = eventConv2dWithGrad(xb, wb, bb, s);
          at::Tensor upstream = at::randn(expected.sizes());
          if (channelsLast) // the gradient in the layout snn-run's convolutions give it
            upstream = upstream.contiguous(at::MemoryFormat::ChannelsLast);
          (expected * upstream).sum().backward();
          (actual * upstream).sum().backward();
          // Forward: the weights of the active taps (the inference test's
          // bound).
          at::Tensor g64 = upstream.abs().to(at::kDouble), x64 = spikes.to(at::kDouble);
          at::Tensor forwardMagnitude =
              at::conv2d(x64, w.abs().to(at::kDouble), b.abs().to(at::kDouble), s.stride, s.padding,
                         s.dilation);
          const int64_t taps = l.kernel * l.kernel;
          snn::test::expectSameSumUpToOrder(actual.detach(), expected.detach(), forwardMagnitude,
                                            l.channels * taps + 1);
          // dL/dx: dense on both paths; |g| through |W| bounds its terms.
          auto [magnitudeX, magnitudeW, unused] = at::convolution_backward(
              g64, x64, w.abs().to(at::kDouble), c10::nullopt, s.stride, s.padding, s.dilation,
              false, {0, 0}, 1, {true, true, false});
          snn::test::expectSameSumUpToOrder(xb.grad(), xa.grad(), magnitudeX, l.outputs * taps);
          // dL/dW: |g| at the outputs each fired input reached, B*OH*OW terms.
          int64_t terms = expected.size(0) * expected.size(2) * expected.size(3);
          snn::test::expectSameSumUpToOrder(wb.grad(), wa.grad(), magnitudeW, terms);
          snn::test::expectSameSumUpToOrder(bb.grad(), ba.grad(), g64.sum({0, 2, 3}), terms);
          if (density > 0)
            EXPECT_GT(wb.grad().abs().max().item<double>(), 0.0);
          else
            EXPECT_EQ(wb.grad().abs().max().item<double>(), 0.0);
        }
  });
}

// The kernels' sums run in an order fixed by the data alone (forward: one
// output row a task; weight gradient: one (channel, block) a task over the
// samples in order), so the thread count does not change a bit.
TEST(SpikeConv, ResultsDoNotDependOnTheThreadCount) {
  at::manual_seed(13);
  int threads = at::get_num_threads();
  onEachInstructionSet([] {
    for (const Layer &l : layers()) {
      SCOPED_TRACE(::testing::Message()
                   << l.channels << " -> " << l.outputs << " kernel " << l.kernel);
      at::Tensor x = (at::rand({9, l.channels, 11, 9}) < 0.2).to(at::kFloat);
      at::Tensor w = at::randn({l.outputs, l.channels, l.kernel, l.kernel});
      at::Tensor bits = packSpikeBits(x.contiguous(at::MemoryFormat::ChannelsLast));
      auto run = [&](int n) {
        at::set_num_threads(n);
        at::Tensor y = spikeConv2dForward(x, w, at::Tensor(), l.g);
        at::Tensor grad = at::cos(y); // a gradient that depends on every output
        return std::make_pair(y, spikeConv2dWeightGrad(bits, x.sizes(), grad, w.sizes(), l.g));
      };
      auto [y1, w1] = run(1);
      auto [y3, w3] = run(3);
      EXPECT_TRUE(at::equal(y1, y3));
      EXPECT_TRUE(at::equal(w1, w3));
      EXPECT_GT(w1.abs().max().item<double>(), 0.0);
    }
  });
  at::set_num_threads(threads);
}
