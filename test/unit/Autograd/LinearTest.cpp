//===- LinearTest.cpp - The thread-split Linear against at::linear --------===//
//
// With two intra-op threads a large Linear splits its GEMMs into row blocks
// of the output; every element still sums over the whole reduction, so the
// values equal at::linear's up to the order of that sum, which each BLAS kernel
// chooses for itself. The tolerance is therefore the float32 bound for two
// orders of the same sum (TestSupport.h), not a number one kernel happens to
// meet; with one thread (or a small GEMM) it is at::linear itself.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include "snn/Runtime/Autograd/LinearAutograd.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

using namespace snn::runtime;
using snn::test::expectSameSumUpToOrder;

namespace {

class ThreadedLinear : public ::testing::Test {
protected:
  void SetUp() override {
    threads = at::get_num_threads();
    at::set_num_threads(2);
    at::manual_seed(21);
  }
  void TearDown() override { at::set_num_threads(threads); }
  int threads = 1;
};

/// y = x W^T + b as sums of in + 1 terms.
void expectLinearClose(const at::Tensor &actual, const at::Tensor &expected,
                       const at::Tensor &x, const at::Tensor &w,
                       const at::Tensor &b) {
  at::Tensor magnitude = at::matmul(x.abs().to(at::kDouble),
                                    w.abs().to(at::kDouble).t());
  if (b.defined())
    magnitude = magnitude + b.abs().to(at::kDouble);
  expectSameSumUpToOrder(actual, expected, magnitude, x.size(-1) + 1);
}

void expectMatchesLinear(int64_t m, int64_t in, int64_t out, bool bias) {
  at::Tensor x = at::randn({m, in}), w = at::randn({out, in}) * 0.05;
  at::Tensor b = bias ? at::randn({out}) : at::Tensor();
  auto leaves = [&] {
    std::vector<at::Tensor> t{x.clone().requires_grad_(true),
                              w.clone().requires_grad_(true)};
    if (bias)
      t.push_back(b.clone().requires_grad_(true));
    return t;
  };
  std::vector<at::Tensor> ours = leaves(), theirs = leaves();
  at::Tensor g = at::randn({m, out});
  at::Tensor y = threadedLinear(ours[0], ours[1], bias ? ours[2] : b);
  at::Tensor yRef = at::linear(theirs[0], theirs[1], bias ? theirs[2] : b);
  expectLinearClose(y, yRef, x, w, b);
  (y * g).sum().backward();
  (yRef * g).sum().backward();
  at::Tensor gAbs = g.abs().to(at::kDouble);
  // dx = g W sums over `out`, dW = g^T x and db = sum(g) over the m rows.
  expectSameSumUpToOrder(ours[0].grad(), theirs[0].grad(),
                         at::matmul(gAbs, w.abs().to(at::kDouble)), out);
  expectSameSumUpToOrder(ours[1].grad(), theirs[1].grad(),
                         at::matmul(gAbs.t(), x.abs().to(at::kDouble)), m);
  if (bias)
    expectSameSumUpToOrder(ours[2].grad(), theirs[2].grad(), gAbs.sum(0), m);
}

} // namespace

TEST_F(ThreadedLinear, SplitsLargeGemmsAndMatchesATen) {
  at::Tensor x = at::randn({256, 1568}), w = at::randn({512, 1568});
  EXPECT_TRUE(linearIsSplit(x, w));
  expectMatchesLinear(256, 1568, 512, false);
  expectMatchesLinear(130, 700, 301, true); // odd sizes, bias
}

TEST_F(ThreadedLinear, NoGradForwardMatches) {
  at::Tensor x = at::randn({128, 600}), w = at::randn({200, 600}),
             b = at::randn({200});
  ASSERT_TRUE(linearIsSplit(x, w));
  at::NoGradGuard noGrad;
  expectLinearClose(threadedLinear(x, w, b), at::linear(x, w, b), x, w, b);
}

TEST_F(ThreadedLinear, SmallOrOneThreadIsATenLinear) {
  at::Tensor x = at::randn({256, 512}), w = at::randn({10, 512});
  EXPECT_FALSE(linearIsSplit(x, w)); // 1.3 M multiply-adds
  EXPECT_FALSE(linearIsSplit(x.to(at::kDouble), w.to(at::kDouble)));
  at::Tensor big = at::randn({256, 1568}), wide = at::randn({512, 1568});
  at::set_num_threads(1);
  EXPECT_FALSE(linearIsSplit(big, wide));
  EXPECT_TRUE(at::equal(threadedLinear(big, wide, at::Tensor()),
                        at::linear(big, wide)));
}
