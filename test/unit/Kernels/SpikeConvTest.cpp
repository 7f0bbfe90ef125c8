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

TEST(SpikeConv, EqualsTheDenseConvolutionAtEveryDensity) {
  at::manual_seed(11);
  struct Geometry {
    SpikeConvGeometry g;
    int64_t kernel;
  };
  std::vector<Geometry> geometries = {{{{1, 1}, {1, 1}, {1, 1}}, 3},
                                      {{{2, 1}, {0, 2}, {1, 2}}, 3},
                                      {{{1, 1}, {0, 0}, {1, 1}}, 1}};
  for (const Geometry &geo : geometries)
    for (double density : {0.0, 0.05, 0.2, 0.5, 1.0})
      for (bool withBias : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "kernel " << geo.kernel << " stride "
                                          << geo.g.stride[0] << " density " << density
                                          << (withBias ? " bias" : ""));
        at::Tensor x = (at::rand({3, 5, 11, 9}) < density).to(at::kFloat);
        at::Tensor w = at::randn({7, 5, geo.kernel, geo.kernel});
        at::Tensor b = withBias ? at::randn({7}) : at::Tensor();
        std::optional<double> measured = spikeDensity(x);
        ASSERT_TRUE(measured.has_value());
        EXPECT_NEAR(*measured, density, 0.1);
        at::Tensor expected = at::conv2d(x, w, b, geo.g.stride, geo.g.padding, geo.g.dilation);
        at::Tensor actual = spikeConv2dForward(x, w, b, geo.g);
        ASSERT_EQ(actual.sizes(), expected.sizes());
        at::Tensor magnitude =
            at::conv2d(x.to(at::kDouble), w.abs().to(at::kDouble),
                       withBias ? b.abs().to(at::kDouble) : at::Tensor(), geo.g.stride,
                       geo.g.padding, geo.g.dilation);
        int64_t terms = 5 * geo.kernel * geo.kernel + 1;
        snn::test::expectSameSumUpToOrder(actual, expected, magnitude, terms);
      }
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
  struct Geometry {
    Conv2dShape shape;
    int64_t kernel;
  };
  std::vector<Geometry> geometries = {{{{1, 1}, {1, 1}, {1, 1}, 1}, 3},
                                      {{{2, 1}, {0, 2}, {1, 2}, 1}, 3}};
  for (const Geometry &geo : geometries)
    for (double density : {0.0, 0.05, 0.2, 0.5, 1.0})
      for (bool channelsLast : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "stride " << geo.shape.stride[0] << " density "
                                          << density << (channelsLast ? " NHWC" : ""));
        at::Tensor spikes = (at::rand({6, 5, 11, 9}) < density).to(at::kFloat);
        if (channelsLast)
          spikes = spikes.contiguous(at::MemoryFormat::ChannelsLast);
        at::Tensor w = at::randn({7, 5, geo.kernel, geo.kernel}), b = at::randn({7});
        at::Tensor xa = spikes.clone().requires_grad_(true), wa = w.clone().requires_grad_(true),
                   ba = b.clone().requires_grad_(true);
        at::Tensor xb = spikes.clone().requires_grad_(true), wb = w.clone().requires_grad_(true),
                   bb = b.clone().requires_grad_(true);
        const Conv2dShape &s = geo.shape;
        at::Tensor expected = at::conv2d(xa, wa, ba, s.stride, s.padding, s.dilation);
        at::Tensor actual = eventConv2dWithGrad(xb, wb, bb, s);
        at::Tensor upstream = at::randn(expected.sizes());
        (expected * upstream).sum().backward();
        (actual * upstream).sum().backward();
        // Forward: the weights of the active taps (the inference test's bound).
        at::Tensor g64 = upstream.abs().to(at::kDouble), x64 = spikes.to(at::kDouble);
        at::Tensor forwardMagnitude = at::conv2d(x64, w.abs().to(at::kDouble),
                                                 b.abs().to(at::kDouble), s.stride, s.padding,
                                                 s.dilation);
        snn::test::expectSameSumUpToOrder(actual.detach(), expected.detach(), forwardMagnitude,
                                          5 * geo.kernel * geo.kernel + 1);
        // dL/dx: dense on both paths; |g| through |W| bounds its terms.
        auto [magnitudeX, magnitudeW, unused] = at::convolution_backward(
            g64, x64, w.abs().to(at::kDouble), c10::nullopt, s.stride, s.padding, s.dilation,
            false, {0, 0}, 1, {true, true, false});
        snn::test::expectSameSumUpToOrder(xb.grad(), xa.grad(), magnitudeX,
                                          7 * geo.kernel * geo.kernel);
        // dL/dW: |g| at the outputs each fired input reached, B*OH*OW terms.
        int64_t terms = expected.size(0) * expected.size(2) * expected.size(3);
        snn::test::expectSameSumUpToOrder(wb.grad(), wa.grad(), magnitudeW, terms);
        snn::test::expectSameSumUpToOrder(bb.grad(), ba.grad(), g64.sum({0, 2, 3}), terms);
        if (density > 0)
          EXPECT_GT(wb.grad().abs().max().item<double>(), 0.0);
        else
          EXPECT_EQ(wb.grad().abs().max().item<double>(), 0.0);
      }
}
