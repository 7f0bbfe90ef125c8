//===- SpikeLinearTest.cpp - Event-driven Linear against the dense GEMM ---===//
//
// Random spike matrices at densities from 0 to 1: the event kernels' output, input gradient
// and weight gradient against at::linear and its autograd. Both sum the same products in
// other orders, so each element may differ by the float32 bound of a sum of n terms,
// 2 n eps sum|term| (n the reduction length; both sides round).

#include "snn/Runtime/Autograd/SpikeLinearAutograd.h"
#include "snn/Runtime/Kernels/SpikeLinearKernels.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace snn::runtime;

namespace {

constexpr double kEps = std::numeric_limits<float>::epsilon();

struct Shape {
  int64_t rows, in, out;
};

const Shape kShapes[] = {{1, 1, 1}, {7, 13, 5}, {64, 200, 33}, {33, 512, 10}, {0, 5, 3}};
const double kDensities[] = {0.0, 0.02, 0.1, 0.3, 0.6, 1.0};

at::Tensor spikesAt(const Shape &s, double density) {
  return (at::rand({s.rows, s.in}) < density).to(at::kFloat);
}

/// Every |a - b| within 2 n eps scale (elementwise); the worst ratio otherwise.
void expectWithin(const at::Tensor &a, const at::Tensor &b, const at::Tensor &scale,
                  int64_t n, const std::string &what) {
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  if (a.numel() == 0)
    return;
  at::Tensor bound = scale * (2.0 * double(n + 1) * kEps) + 1e-30;
  at::Tensor excess = (a - b).abs() / bound;
  EXPECT_LE(excess.max().item<double>(), 1.0) << what;
}

} // namespace

TEST(SpikeLinear, PacksOnlyZerosAndOnes) {
  at::Tensor x = at::tensor({0.f, 1.f, 0.f, 1.f, 1.f, 0.f}).view({2, 3});
  std::optional<SpikeRows> s = packSpikes(x);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->offsets, (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(s->columns, (std::vector<int32_t>{1, 0, 1}));
  EXPECT_DOUBLE_EQ(s->density(), 0.5);
  EXPECT_TRUE(at::equal(unpackSpikes(*s), x));
  for (float bad : {0.5f, 2.0f, -1.0f, std::numeric_limits<float>::quiet_NaN()}) {
    at::Tensor y = x.clone();
    y[1][2] = bad;
    EXPECT_FALSE(packSpikes(y)) << bad;
  }
  EXPECT_THROW(packSpikes(at::zeros({2, 3, 4})), Error);
  EXPECT_THROW(packSpikes(at::zeros({2, 3}, at::kDouble)), Error);
}

TEST(SpikeLinear, IndicesAreSmallerThanTheFloatMatrixBelowFullDensity) {
  at::manual_seed(3);
  Shape s{256, 512, 1};
  std::optional<SpikeRows> packed = packSpikes(spikesAt(s, 0.1));
  ASSERT_TRUE(packed);
  EXPECT_LT(double(packed->bytes()), 0.15 * double(s.rows * s.in * 4));
}

TEST(SpikeLinear, ForwardEqualsTheDenseGemmAtEveryDensity) {
  at::manual_seed(7);
  for (const Shape &s : kShapes)
    for (double density : kDensities)
      for (bool withBias : {true, false}) {
        at::Tensor x = spikesAt(s, density);
        at::Tensor w = at::randn({s.out, s.in});
        at::Tensor b = withBias ? at::randn({s.out}) : at::Tensor();
        std::optional<SpikeRows> packed = packSpikes(x);
        ASSERT_TRUE(packed);
        at::Tensor got = spikeLinearForward(*packed, w, b);
        at::Tensor scale = at::linear(x, w.abs(), withBias ? b.abs() : at::Tensor());
        expectWithin(got, at::linear(x, w, b), scale, s.in,
                     "forward " + std::to_string(s.rows) + "x" + std::to_string(s.in) + "->" +
                         std::to_string(s.out) + " at density " + std::to_string(density));
      }
}

TEST(SpikeLinear, GradientsEqualTheDenseAutograd) {
  at::manual_seed(11);
  for (const Shape &s : kShapes)
    for (double density : kDensities) {
      at::Tensor x = spikesAt(s, density);
      at::Tensor w = at::randn({s.out, s.in}), b = at::randn({s.out});
      at::Tensor gradOut = at::randn({s.rows, s.out});
      auto run = [&](bool events) {
        at::Tensor xi = x.clone().requires_grad_(true), wi = w.clone().requires_grad_(true),
                   bi = b.clone().requires_grad_(true);
        at::Tensor y = events ? spikeLinear(xi, wi, bi, 1.0).value() : at::linear(xi, wi, bi);
        y.backward(gradOut);
        return std::vector<at::Tensor>{xi.grad(), wi.grad(), bi.grad()};
      };
      std::vector<at::Tensor> got = run(true), want = run(false);
      std::string where = std::to_string(s.rows) + "x" + std::to_string(s.in) + "->" +
                          std::to_string(s.out) + " at density " + std::to_string(density);
      expectWithin(got[0], want[0], gradOut.abs().mm(w.abs()), s.out, "input grad " + where);
      expectWithin(got[1], want[1], gradOut.abs().t().mm(x), s.rows, "weight grad " + where);
      expectWithin(got[2], want[2], gradOut.abs().sum(0), s.rows, "bias grad " + where);
    }
}

TEST(SpikeLinear, FallsBackAboveTheDensityOrForOtherInputs) {
  at::manual_seed(5);
  at::Tensor x = spikesAt({16, 64, 8}, 0.5), w = at::randn({8, 64});
  EXPECT_TRUE(spikeLinear(x, w, at::Tensor(), 0.9));
  EXPECT_FALSE(spikeLinear(x, w, at::Tensor(), 0.1));
  EXPECT_FALSE(spikeLinear(x * 0.5, w, at::Tensor(), 1.0)); // not spikes
  EXPECT_FALSE(spikeLinear(x.to(at::kDouble), w, at::Tensor(), 1.0));
}
