//===- SpikeConvTest.cpp - The event-driven conv2d vs the dense one -------===//
//
// On random spike patterns at densities 0 to 1, strides, paddings, dilations
// and a bias or none, the event-driven conv2d equals at::conv2d within the
// float32 bound of the same sums in any order (TestSupport.h): the terms are
// the weights of the active taps, so |W| conv x bounds their absolute sum.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include "snn/Runtime/Kernels/SpikeBits.h"
#include "snn/Runtime/Kernels/SpikeConvKernels.h"

#include <ATen/ATen.h>
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
