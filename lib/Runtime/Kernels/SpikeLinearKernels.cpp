//===- SpikeLinearKernels.cpp - Linear layers fed by spikes ---------------===//

#include "snn/Runtime/Kernels/SpikeLinearKernels.h"
#include "snn/Runtime/Support/Error.h"

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <cstring>
#include <limits>

namespace snn::runtime {

namespace {

/// Additions per parallel chunk below which another thread does not pay.
constexpr int64_t kMinAddsPerChunk = 1 << 15;
/// Output columns per tile and inputs per block: a block's weight rows of one tile
/// (kInputBlock x kOutputTile floats, 128 KiB) stay in L2 while every row of a chunk adds
/// its active ones to its own tile (1 KiB, in L1). Without the blocking each active input
/// streamed a whole weight row from memory.
constexpr int64_t kOutputTile = 256;
constexpr int64_t kInputBlock = 128;

void requireFloatMatrix(const at::Tensor &t, const char *what) {
  if (!t.defined() || t.dim() != 2 || t.scalar_type() != at::kFloat || !t.device().is_cpu())
    throw Error(std::string(what) + " must be a 2-D float32 CPU tensor");
}

/// Rows (or columns) per chunk for `units` of about `addsPerUnit` additions each.
int64_t grainFor(int64_t units, double addsPerUnit) {
  int64_t grain = int64_t(double(kMinAddsPerChunk) / std::max(addsPerUnit, 1.0));
  return std::clamp<int64_t>(grain, 1, std::max<int64_t>(units, 1));
}

/// `dst[0..n) += src[0..n)`: the loop the compiler vectorises.
inline void addRow(float *__restrict dst, const float *__restrict src, int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    dst[j] += src[j];
}

/// For rows [begin, end) of `x`, output columns [c0, c0 + width): adds the weight rows (wt,
/// [cols, n]) of each row's active inputs to its output row, input block by input block.
/// `blockStart[m * (blocks + 1) + j]` is the first of row m's indices in input block j. Built
/// for AVX2 and for baseline x86-64, chosen when the program loads.
__attribute__((target_clones("avx2", "default"))) void
accumulateForwardTile(const SpikeRows &x, const std::vector<int64_t> &blockStart,
                      int64_t blocks, const float *wt, float *out, int64_t n, int64_t begin,
                      int64_t end, int64_t c0, int64_t width) {
  for (int64_t j = 0; j < blocks; ++j)
    for (int64_t m = begin; m < end; ++m) {
      float *row = out + m * n + c0;
      const int64_t *starts = blockStart.data() + m * (blocks + 1);
      for (int64_t i = starts[j]; i < starts[j + 1]; ++i)
        addRow(row, wt + int64_t(x.columns[size_t(i)]) * n + c0, width);
    }
}

/// Row m's index ranges per input block of kInputBlock inputs (see accumulateForwardTile).
std::vector<int64_t> inputBlockStarts(const SpikeRows &x, int64_t blocks) {
  std::vector<int64_t> starts(size_t(x.rows * (blocks + 1)));
  for (int64_t m = 0; m < x.rows; ++m) {
    int64_t *s = starts.data() + m * (blocks + 1);
    int64_t i = x.offsets[size_t(m)], last = x.offsets[size_t(m) + 1];
    for (int64_t j = 0; j <= blocks; ++j) {
      while (i < last && x.columns[size_t(i)] < j * kInputBlock)
        ++i;
      s[j] = j == blocks ? last : i;
    }
  }
  return starts;
}

/// gradWt[k, c0 .. c0 + width) for inputs [begin, end): the sum of grad's rows where k fired.
__attribute__((target_clones("avx2", "default"))) void
accumulateWeightGradTile(const std::vector<int64_t> &offsets, const std::vector<int32_t> &rows,
                         const float *grad, float *out, int64_t n, int64_t begin, int64_t end,
                         int64_t c0, int64_t width) {
  for (int64_t k = begin; k < end; ++k) {
    float *row = out + k * n + c0;
    for (int64_t i = offsets[size_t(k)]; i < offsets[size_t(k) + 1]; ++i)
      addRow(row, grad + int64_t(rows[size_t(i)]) * n + c0, width);
  }
}

/// The same ones, column by column: column k's rows are rows[offsets[k] .. offsets[k + 1]),
/// ascending (a counting sort of SpikeRows, which is row-major).
struct SpikeColumns {
  std::vector<int64_t> offsets;
  std::vector<int32_t> rows;
};

SpikeColumns byColumn(const SpikeRows &x) {
  SpikeColumns c;
  c.offsets.assign(size_t(x.cols) + 1, 0);
  for (int32_t k : x.columns)
    ++c.offsets[size_t(k) + 1];
  for (size_t k = 0; k < size_t(x.cols); ++k)
    c.offsets[k + 1] += c.offsets[k];
  std::vector<int64_t> next(c.offsets.begin(), c.offsets.end() - 1);
  c.rows.resize(x.columns.size());
  for (int64_t m = 0; m < x.rows; ++m)
    for (int64_t i = x.offsets[size_t(m)]; i < x.offsets[size_t(m) + 1]; ++i)
      c.rows[size_t(next[size_t(x.columns[size_t(i)])]++)] = int32_t(m);
  return c;
}

} // namespace

double SpikeRows::density() const {
  double all = double(rows) * double(cols);
  return all > 0 ? double(active()) / all : 0.0;
}

int64_t SpikeRows::bytes() const {
  return int64_t(offsets.size() * sizeof(int64_t) + columns.size() * sizeof(int32_t));
}

std::optional<SpikeRows> packSpikes(const at::Tensor &input) {
  requireFloatMatrix(input, "packSpikes: the input");
  if (input.size(0) > std::numeric_limits<int32_t>::max() ||
      input.size(1) > std::numeric_limits<int32_t>::max())
    throw Error("packSpikes: a spike matrix of " + std::to_string(input.size(0)) + " x " +
                std::to_string(input.size(1)) + " is beyond 32-bit indices");
  at::Tensor x = input.contiguous();
  const float *p = x.data_ptr<float>();
  SpikeRows s;
  s.rows = x.size(0);
  s.cols = x.size(1);
  s.offsets.reserve(size_t(s.rows) + 1);
  for (int64_t m = 0; m < s.rows; ++m, p += s.cols) {
    for (int64_t k = 0; k < s.cols; ++k) {
      if (p[k] == 1.0f)
        s.columns.push_back(int32_t(k));
      else if (p[k] != 0.0f) // also NaN
        return std::nullopt;
    }
    s.offsets.push_back(int64_t(s.columns.size()));
  }
  return s;
}

at::Tensor unpackSpikes(const SpikeRows &spikes) {
  at::Tensor x = at::zeros({spikes.rows, spikes.cols}, at::kFloat);
  float *p = x.data_ptr<float>();
  for (int64_t m = 0; m < spikes.rows; ++m)
    for (int64_t i = spikes.offsets[size_t(m)]; i < spikes.offsets[size_t(m) + 1]; ++i)
      p[m * spikes.cols + spikes.columns[size_t(i)]] = 1.0f;
  return x;
}

at::Tensor spikeLinearForward(const SpikeRows &x, const at::Tensor &weight,
                              const at::Tensor &bias) {
  requireFloatMatrix(weight, "spikeLinearForward: the weight");
  if (weight.size(1) != x.cols)
    throw Error("spikeLinearForward: weight [" + std::to_string(weight.size(0)) + ", " +
                std::to_string(weight.size(1)) + "] for " + std::to_string(x.cols) +
                " inputs");
  const int64_t n = weight.size(0);
  at::Tensor b = bias.defined() ? bias.contiguous() : at::Tensor();
  if (b.defined() && (b.dim() != 1 || b.size(0) != n || b.scalar_type() != at::kFloat))
    throw Error("spikeLinearForward: the bias must be float32 [" + std::to_string(n) + "]");
  at::Tensor wt = weight.t().contiguous(); // row k: the weights of input k
  at::Tensor y = at::empty({x.rows, n}, weight.options());
  const float *w = wt.data_ptr<float>();
  const float *bp = b.defined() ? b.data_ptr<float>() : nullptr;
  float *out = y.data_ptr<float>();
  const int64_t blocks = (x.cols + kInputBlock - 1) / kInputBlock;
  std::vector<int64_t> blockStart = inputBlockStarts(x, blocks);
  double perRow = (x.density() * double(x.cols) + 1.0) * double(n);
  at::parallel_for(0, x.rows, grainFor(x.rows, perRow), [&](int64_t begin, int64_t end) {
    for (int64_t m = begin; m < end; ++m) {
      float *row = out + m * n;
      if (bp)
        std::memcpy(row, bp, size_t(n) * sizeof(float));
      else
        std::fill(row, row + n, 0.0f);
    }
    for (int64_t c0 = 0; c0 < n; c0 += kOutputTile)
      accumulateForwardTile(x, blockStart, blocks, w, out, n, begin, end, c0,
                            std::min(kOutputTile, n - c0));
  });
  return y;
}

at::Tensor spikeLinearWeightGrad(const SpikeRows &x, const at::Tensor &gradOutput) {
  requireFloatMatrix(gradOutput, "spikeLinearWeightGrad: the output gradient");
  if (gradOutput.size(0) != x.rows)
    throw Error("spikeLinearWeightGrad: an output gradient of " +
                std::to_string(gradOutput.size(0)) + " rows for " + std::to_string(x.rows) +
                " spike rows");
  at::Tensor grad = gradOutput.contiguous();
  const int64_t n = grad.size(1);
  SpikeColumns c = byColumn(x);
  at::Tensor gradWt = at::empty({x.cols, n}, grad.options()); // row k: dL/dW[:, k]
  const float *g = grad.data_ptr<float>();
  float *out = gradWt.data_ptr<float>();
  gradWt.zero_();
  double perColumn = (x.density() * double(x.rows) + 1.0) * double(kOutputTile);
  // Tile by tile, so that grad's columns of the tile (rows x 1 KiB) stay in L2 while every
  // input gathers its rows.
  for (int64_t c0 = 0; c0 < n; c0 += kOutputTile)
    at::parallel_for(0, x.cols, grainFor(x.cols, perColumn), [&](int64_t begin, int64_t end) {
      accumulateWeightGradTile(c.offsets, c.rows, g, out, n, begin, end, c0,
                               std::min(kOutputTile, n - c0));
    });
  return gradWt.t();
}

} // namespace snn::runtime
