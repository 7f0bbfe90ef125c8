//===- SpikeConvBench.cpp - Event-driven conv2d against oneDNN's ----------===//
//
// conv2d layers fed by random spikes at several densities, at the shapes of
// SpikingJelly's networks (SEW-ResNet-18 at 224 x 224 with T * N = 16, the
// CSNN's and the VGG's): the runtime's event-driven kernels
// (SpikeConvKernels.h) against at::conv2d (oneDNN, the call a PyTorch nn.Conv2d
// makes and snn-run's dense path), in the same process on the same tensors,
// with snn-run's process settings. Two columns per path: inference (the
// forward) and the training work the kernels replace (the forward plus the
// weight's gradient; x's gradient is dense on both paths). Prints a Markdown
// table and, per shape, the density up to which the event-driven kernels are
// faster.
//
//   snn-bench-spike-conv [--threads N] [--repeats R] [--only TEXT]
//
//===----------------------------------------------------------------------===//

#include "BenchSupport.h"
#include "snn/Runtime/Commands/CommandSupport.h"
#include "snn/Runtime/Kernels/SpikeBits.h"
#include "snn/Runtime/Kernels/SpikeConvKernels.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

using snn::bench::medianSeconds;
using snn::bench::parseFlag;
using snn::runtime::SpikeConvGeometry;

struct Layer {
  const char *name;
  int64_t batch, channels, size, outputs, kernel, stride, padding;
};

struct Times {
  double forward, training;
};

Times timeDense(const at::Tensor &x, const at::Tensor &w, const SpikeConvGeometry &g,
                const at::Tensor &grad, int repeats) {
  auto forward = [&] { return at::conv2d(x, w, {}, g.stride, g.padding, g.dilation); };
  return {medianSeconds([&] { forward(); }, repeats),
          medianSeconds(
              [&] {
                forward();
                at::convolution_backward(grad, x, w, c10::nullopt, g.stride, g.padding, g.dilation,
                                         false, {0, 0}, 1, {false, true, false});
              },
              repeats)};
}

Times timeEvent(const at::Tensor &x, const at::Tensor &w, const SpikeConvGeometry &g,
                const at::Tensor &grad, int repeats) {
  using namespace snn::runtime;
  auto forward = [&] { return spikeConv2dForward(x, w, at::Tensor(), g); };
  return {medianSeconds([&] { forward(); }, repeats),
          medianSeconds(
              [&] {
                forward();
                at::Tensor bits = packSpikeBits(x.contiguous(at::MemoryFormat::ChannelsLast));
                spikeConv2dWeightGrad(bits, x.sizes(), grad, w.sizes(), g);
              },
              repeats)};
}

} // namespace

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0) {
      std::printf("usage: snn-bench-spike-conv [--threads N] [--repeats R] [--only "
                  "TEXT]\n"
                  "Times conv2d layers on spikes: the runtime's event-driven kernels "
                  "against "
                  "at::conv2d (oneDNN), forward and forward + weight gradient.\n"
                  "  --threads N   intra-op threads (default 2)\n"
                  "  --repeats R   timed calls of each, the median reported (default "
                  "5)\n"
                  "  --only TEXT   only the layers whose name contains TEXT\n");
      return 0;
    }
  int threads = parseFlag(argc, argv, "--threads", 2);
  int repeats = parseFlag(argc, argv, "--repeats", 5);
  std::string only;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--only") == 0)
      only = argv[i + 1];
  snn::runtime::setIntraOpThreads(threads);
  snn::runtime::keepLargeAllocationsOnTheHeap();
  const Layer layers[] = {{"sew layer1 3x3", 16, 64, 56, 64, 3, 1, 1},
                          {"sew layer2 3x3", 16, 128, 28, 128, 3, 1, 1},
                          {"sew layer3 3x3 s2", 16, 128, 28, 256, 3, 2, 1},
                          {"sew layer3 1x1 s2", 16, 128, 28, 256, 1, 2, 0},
                          {"sew layer4 3x3", 16, 512, 7, 512, 3, 1, 1},
                          {"vgg 3x3", 128, 64, 24, 128, 3, 1, 1},
                          {"csnn 3x3", 128, 32, 14, 32, 3, 1, 1}};
  const double densities[] = {0.05, 0.1, 0.2, 0.3};
  at::manual_seed(0);
  std::printf("| layer | x | density | event fwd ms | dense fwd ms | fwd ratio "
              "| event train ms "
              "| dense train ms | train ratio "
              "|\n|---|---|---|---|---|---|---|---|---|\n");
  for (const Layer &l : layers) {
    if (std::string(l.name).find(only) == std::string::npos)
      continue;
    SpikeConvGeometry g{{l.stride, l.stride}, {l.padding, l.padding}, {1, 1}};
    at::Tensor w = at::randn({l.outputs, l.channels, l.kernel, l.kernel});
    int64_t out = (l.size + 2 * l.padding - l.kernel) / l.stride + 1;
    at::Tensor grad =
        at::randn({l.batch, l.outputs, out, out}).contiguous(at::MemoryFormat::ChannelsLast);
    for (double density : densities) {
      // Channels-last, as snn-run's convolutions read and write them.
      at::Tensor x = (at::rand({l.batch, l.channels, l.size, l.size}) < density)
                         .to(at::kFloat)
                         .contiguous(at::MemoryFormat::ChannelsLast);
      Times event = timeEvent(x, w, g, grad, repeats), dense = timeDense(x, w, g, grad, repeats);
      std::printf("| %s | [%lld, %lld, %lld, %lld] | %.2f | %.2f | %.2f | "
                  "%.2fx | %.2f | %.2f "
                  "| %.2fx |\n",
                  l.name, (long long)l.batch, (long long)l.channels, (long long)l.size,
                  (long long)l.size, density, event.forward * 1e3, dense.forward * 1e3,
                  dense.forward / event.forward, event.training * 1e3, dense.training * 1e3,
                  dense.training / event.training);
      std::fflush(stdout);
    }
  }
  std::printf("\n%d threads, median of %d calls each\n", at::get_num_threads(), repeats);
  return 0;
}
