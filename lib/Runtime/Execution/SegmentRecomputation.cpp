//===- SegmentRecomputation.cpp - Training that recomputes its segments ---===//
//
// Executor::runRecomputingSegments: activation checkpointing of a whole
// program in one process. Between two segments one value is live and it is
// spikes, so what a segment keeps for the backward is that value as bits
// (1/32 of float32); everything the segment's layers would have kept at T
// steps exists only while its backward runs. Each segment is one autograd
// node whose backward replays the segment's forward with a graph (same
// kernels, same Dropout draws, BatchNorm's running statistics left as the
// first forward set them) and runs that graph's backward, which accumulates
// the parameters' gradients and returns the input's.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Execution/SegmentRecomputation.h"
#include "snn/Runtime/Execution/Executor.h"
#include "snn/Runtime/Execution/RandomState.h"
#include "snn/Runtime/Kernels/SpikeBits.h"
#include "snn/Runtime/Support/Error.h"

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <numeric>
#include <utility>

namespace snn::runtime {

namespace {

std::atomic<int64_t> segmentsRecorded{0}, segmentsReplayed{0}, keptBytes{0}, keptFloatBytes{0};

/// x's dimensions ordered by stride, largest first: x.permute(order) is contiguous when x is
/// dense in some order (channels-last, a transposed view), which packing needs.
std::vector<int64_t> memoryOrder(const at::Tensor &x) {
  std::vector<int64_t> order(size_t(x.dim()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&x](int64_t a, int64_t b) { return x.stride(a) > x.stride(b); });
  return order;
}

/// x (contiguous float32) as one byte per value when every value is a whole number in
/// 0..255 (a sum of spikes: a residual connection's counts); -0 is not (it would come back
/// as +0).
std::optional<at::Tensor> packCounts(const at::Tensor &x) {
  at::Tensor bytes = at::empty({x.numel()}, x.options().dtype(at::kByte));
  const float *in = x.data_ptr<float>();
  uint8_t *out = bytes.data_ptr<uint8_t>();
  std::atomic<bool> counts{true};
  at::parallel_for(0, x.numel(), 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end && counts.load(std::memory_order_relaxed); ++i) {
      float v = in[i];
      if (!(v >= 0.0f && v <= 255.0f && float(uint8_t(v)) == v && !std::signbit(v))) {
        counts.store(false, std::memory_order_relaxed); // the first non-count ends the pass
        break;
      }
      out[i] = uint8_t(v);
    }
  });
  if (!counts.load())
    return std::nullopt;
  return bytes;
}

/// A segment's input as it waits for the backward: spikes as bits and counts as bytes, in
/// memory order, or the tensor itself (the program's input, which its caller holds, or
/// other values).
class StoredInput {
public:
  StoredInput() = default;
  explicit StoredInput(const at::Tensor &x) : kept(x.detach()) {}

  /// x compactly when it is spikes; with `anyValue`, counts as bytes and else x itself.
  static std::optional<StoredInput> pack(const at::Tensor &x, bool anyValue) {
    if (!x.defined() || x.scalar_type() != at::kFloat || !x.device().is_cpu())
      return anyValue ? std::optional<StoredInput>(StoredInput(x)) : std::nullopt;
    std::vector<int64_t> order = memoryOrder(x);
    at::Tensor inMemoryOrder = x.permute(order);
    bool dense = inMemoryOrder.is_contiguous();
    StoredInput stored;
    if (std::optional<at::Tensor> bits =
            dense ? packSpikeBitsIfSpikes(inMemoryOrder) : std::nullopt) {
      stored.packed = *bits;
      stored.asBits = true;
    } else if (!anyValue) {
      return std::nullopt;
    } else if (std::optional<at::Tensor> bytes =
                   dense ? packCounts(inMemoryOrder) : std::nullopt) {
      stored.packed = *bytes;
    } else {
      return StoredInput(x);
    }
    stored.order = std::move(order);
    stored.sizes = x.sizes().vec();
    stored.strides = x.strides().vec();
    return stored;
  }

  /// Bytes held, and the value's as float32.
  int64_t bytes() const { return packed.defined() ? packed.nbytes() : kept.nbytes(); }
  int64_t floatBytes() const {
    if (!packed.defined())
      return kept.numel() * 4;
    int64_t n = 4;
    for (int64_t size : sizes)
      n *= size;
    return n;
  }

  /// The value again, with the sizes and strides it had (kernels may choose by layout).
  at::Tensor restore() const {
    if (!packed.defined())
      return kept;
    std::vector<int64_t> permuted(order.size()), inverse(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
      permuted[i] = sizes[size_t(order[i])];
      inverse[size_t(order[i])] = int64_t(i);
    }
    at::Tensor unpacked = asBits ? unpackSpikeBits(packed, permuted)
                                 : packed.to(at::kFloat).view(permuted);
    at::Tensor x = at::empty_strided(sizes, strides, unpacked.options());
    return x.copy_(unpacked.permute(inverse));
  }

private:
  at::Tensor kept, packed;
  bool asBits = false;
  std::vector<int64_t> order, sizes, strides;
};

/// The CPU generator's state for the length of a scope, then back to what it was.
class GeneratorStateScope {
public:
  explicit GeneratorStateScope(const at::Tensor &state) : saved(cpuGeneratorState()) {
    setCpuGeneratorState(state);
  }
  ~GeneratorStateScope() { setCpuGeneratorState(saved); }
  GeneratorStateScope(const GeneratorStateScope &) = delete;
  GeneratorStateScope &operator=(const GeneratorStateScope &) = delete;

private:
  at::Tensor saved;
};

/// What a segment's backward needs to run it again.
struct Segment {
  /// Runs the segment's steps over values that hold its input.
  std::function<at::Tensor(const at::Tensor &input)> replay;
  StoredInput input;
  bool inputNeedsGrad = false;
  at::Tensor generatorState; // before the segment's first forward
};

/// Where a replayed segment's backward leaves its input's gradient.
struct GradientCapture : public torch::autograd::Node {
  torch::autograd::variable_list apply(torch::autograd::variable_list &&grads) override {
    gradient = grads[0];
    return {};
  }
  std::string name() const override { return "SegmentInputGradient"; }
  at::Tensor gradient;
};

/// The autograd node of one segment: inputs (the segment's input, the run's
/// anchor), one output.
struct SegmentBackward : public torch::autograd::Node {
  explicit SegmentBackward(Segment segment) : segment(std::move(segment)) {}

  torch::autograd::variable_list apply(torch::autograd::variable_list &&grads) override {
    ++segmentsReplayed;
    at::Tensor x = segment.input.restore();
    // x's gradient arrives here: unlike a leaf's accumulator, the node does not
    // hold x's values, which the first layers may keep as bits.
    std::shared_ptr<GradientCapture> capture;
    if (segment.inputNeedsGrad) {
      capture.reset(new GradientCapture(), torch::autograd::deleteNode);
      torch::autograd::create_gradient_edge(x, capture);
    }
    torch::autograd::Edge root;
    {
      GeneratorStateScope draws(segment.generatorState);
      c10::AutoGradMode gradOn(true);
      at::Tensor output = segment.replay(std::exchange(x, at::Tensor()));
      // The graph, not the output's values: the next segment kept those as bits.
      if (output.requires_grad())
        root = torch::autograd::impl::gradient_edge(output);
    }
    if (grads[0].defined() && root.is_valid())
      torch::autograd::Engine::get_default_engine().execute(
          {root}, {grads[0]}, /*keep_graph=*/false, /*create_graph=*/false,
          /*accumulate_grad=*/true);
    segment = Segment(); // the bits and the replay's captures go now
    return {capture ? capture->gradient : at::Tensor(), at::Tensor()};
  }

  std::string name() const override { return "SegmentRecomputation"; }

  Segment segment;
};

/// `output` with `segment`'s node as its gradient function, after `input`
/// (whose edge it takes) and `anchor`.
at::Tensor recordSegment(at::Tensor output, Segment segment, const at::Tensor &input,
                         const at::Tensor &anchor) {
  // A view made without grad mode cannot take a gradient function of its own.
  if (output.is_view())
    output = at::empty_strided(output.sizes(), output.strides(), output.options())
                 .copy_(output);
  std::shared_ptr<SegmentBackward> node(new SegmentBackward(std::move(segment)),
                                        torch::autograd::deleteNode);
  node->set_next_edges(torch::autograd::collect_next_edges(input, anchor));
  torch::autograd::create_gradient_edge(output, std::move(node));
  return output;
}

} // namespace

RecomputationCounts recomputationCounts() {
  return {segmentsRecorded.load(), segmentsReplayed.load(), keptBytes.load(),
          keptFloatBytes.load()};
}

at::Tensor Executor::runRecomputingSegments(const at::Tensor &input,
                                            const RunContext &context) const {
  if (inputSlot < 0 || outputSlot < 0)
    throw Error(file + ": recomputation runs a whole program, from its input to its output");
  RunContext replayContext = context;
  replayContext.keepRunningStatistics = true;
  replayContext.weightGrads = nullptr;
  // A leaf that requires a gradient: the first segment's input need not.
  at::Tensor anchor = at::empty({0}, input.options()).requires_grad_(true);

  std::vector<at::Tensor> values = constants;
  values[size_t(inputSlot)] = input;
  at::Tensor segmentInput = input;
  StoredInput stored(input);
  size_t first = 0, nextCut = 0;
  int inSlot = inputSlot;
  at::NoGradGuard noGrad;
  while (first < steps.size()) {
    at::Tensor generatorState = cpuGeneratorState();
    size_t end = steps.size();
    int outSlot = outputSlot;
    // The segment ends at the first cut whose value is spikes, or any value once a
    // neuron ran: keeping it then saves at least the neuron's activations.
    std::optional<StoredInput> next;
    size_t index = first;
    bool neuron = false;
    for (; nextCut < cuts.size() && !next; ++nextCut) {
      const SegmentCut &cut = cuts[nextCut];
      runSteps(index, cut.step + 1, values, context, nullptr);
      index = cut.step + 1;
      neuron = neuron || cut.afterNeuron;
      if ((next = StoredInput::pack(values[size_t(cut.slot)], neuron))) {
        end = index;
        outSlot = cut.slot;
      }
    }
    if (!next)
      runSteps(index, steps.size(), values, context, nullptr);
    Segment segment;
    segment.replay = [this, first, end, inSlot, outSlot,
                      replayContext](const at::Tensor &x) {
      std::vector<at::Tensor> replayed = constants;
      replayed[size_t(inSlot)] = x;
      runSteps(first, end, replayed, replayContext, nullptr);
      return replayed[size_t(outSlot)];
    };
    if (first > 0) { // the program's input is its caller's
      keptBytes += stored.bytes();
      keptFloatBytes += stored.floatBytes();
    }
    ++segmentsRecorded;
    segment.input = std::move(stored);
    segment.inputNeedsGrad = segmentInput.requires_grad();
    segment.generatorState = generatorState;
    at::Tensor output =
        recordSegment(values[size_t(outSlot)], std::move(segment), segmentInput, anchor);
    values[size_t(outSlot)] = output;
    segmentInput = output;
    if (next)
      stored = std::move(*next);
    first = end;
    inSlot = outSlot;
  }
  return values[size_t(outputSlot)];
}

} // namespace snn::runtime
