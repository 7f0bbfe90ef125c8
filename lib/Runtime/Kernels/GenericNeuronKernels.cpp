//===- GenericNeuronKernels.cpp - The neuron program evaluator ------------===//
//
// One pass of the step program per block of kBlock elements: every
// instruction is a loop over the block on registers that stay in L1, the
// block's states are carried across all T steps, and the backward recomputes
// a step from its saved states before sweeping it in reverse. The arithmetic
// is PyTorch's float32 arithmetic of the same expression (this file is built
// with -ffp-contract=off, like the hand-written neuron kernels), including
// Python's `c / tensor`, which PyTorch computes as reciprocal(tensor) * c.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Kernels/GenericNeuronKernels.h"

#include "NeuronEquations.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/TensorIO.h"

#include <ATen/Parallel.h>
#include <ATen/ops/add.h>
#include <ATen/ops/div.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/neg.h>
#include <ATen/ops/reciprocal.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/rsub.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/tanh.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <atomic>
#include <cmath>

namespace snn::runtime {

using schema::NeuronInstr;
using schema::NeuronOp;
using schema::NeuronProgram;

namespace {

/// Elements per block: a register is 1 KiB of float, a program's registers
/// and their adjoints stay in L1 and L2.
constexpr int64_t kBlock = 256;
/// Element-steps per parallel chunk, so tiny layers do not pay for threads.
constexpr int64_t kMinWorkPerChunk = 1 << 15;

bool constantRegister(const NeuronProgram &p, int32_t r) {
  return p.code[size_t(r)].op == NeuronOp::Const;
}

/// A uniform as the kernels read it: `channels` values per step (1: the same
/// for every element), a new row every step when `perStep`.
template <typename T> struct UniformView {
  const T *data = nullptr;
  int64_t channels = 1;
  bool perStep = false;
  int64_t size(int64_t steps) const { return (perStep ? steps : 1) * channels; }
};

/// The shape of the work: T steps of M elements; element i of a step is in
/// channel (i / inner) % channels.
struct Layout {
  int64_t steps = 0, perStep = 0, channels = 1, inner = 1;
};

/// One thread's registers for one block and the program's loops over them.
template <typename T> class BlockEvaluator {
public:
  BlockEvaluator(const GenericNeuron &neuron, const Layout &layout,
                 const std::vector<UniformView<T>> &uniformOf)
      : n_(neuron), p_(neuron.program()), layout_(layout), uniformOf_(uniformOf),
        scratch_(p_.code.size() * size_t(kBlock)), reg_(p_.code.size(), nullptr) {
    for (size_t r = 0; r < p_.code.size(); ++r)
      reg_[r] = scratch_.data() + r * size_t(kBlock);
    for (size_t r = 0; r < p_.code.size(); ++r)
      if (constantRegister(p_, int32_t(r)))
        std::fill(reg_[r], reg_[r] + kBlock, T(p_.code[r].value));
  }

  /// Points the block at elements [begin, begin + count) of every step.
  void setBlock(int64_t begin, int64_t count) {
    begin_ = begin;
    count_ = count;
    uniformStep_ = -1;
  }

  /// Fills the uniform registers for step t (once per block unless they
  /// change per step).
  void loadUniforms(int64_t t) {
    for (size_t r = 0; r < p_.code.size(); ++r) {
      const UniformView<T> &u = uniformOf_[r];
      if (!u.data || (uniformStep_ >= 0 && !u.perStep))
        continue;
      const T *row = u.data + (u.perStep ? t * u.channels : 0);
      T *out = reg_[r];
      if (u.channels == 1) {
        std::fill(out, out + count_, row[0]);
        continue;
      }
      for (int64_t i = 0; i < count_; ++i)
        out[i] = row[((begin_ + i) / layout_.inner) % layout_.channels];
    }
    uniformStep_ = t;
  }

  /// Evaluates the step's varying instructions from the input and states at `x`
  /// and `state[j]`.
  void forward(const T *x, const std::vector<const T *> &state) {
    reg_[size_t(p_.input)] = const_cast<T *>(x);
    for (size_t j = 0; j < state.size(); ++j)
      if (p_.stateRead[j] >= 0)
        reg_[size_t(p_.stateRead[j])] = const_cast<T *>(state[j]);
    for (size_t r = 0; r < p_.code.size(); ++r)
      if (p_.varies[r] && p_.code[r].op != NeuronOp::Input && p_.code[r].op != NeuronOp::State)
        evaluate(int32_t(r));
  }

  const T *value(int32_t r) const { return reg_[size_t(r)]; }
  int64_t count() const { return count_; }

  /// The reverse sweep of the step just evaluated: `adj` holds dL/d of each
  /// register (seeded by the caller at the output and the next states).
  void backward(T *adj, Surrogate surrogate, T alpha, T beta) const {
    for (int32_t r = int32_t(p_.code.size()) - 1; r >= 0; --r)
      if (p_.varies[size_t(r)])
        differentiate(r, adj, surrogate, alpha, beta);
  }

private:
  void evaluate(int32_t r);
  void differentiate(int32_t r, T *adj, Surrogate surrogate, T alpha, T beta) const;
  /// differentiate() of +, -, * and /.
  void differentiateBinary(int32_t r, T *adj) const;

  const GenericNeuron &n_;
  const NeuronProgram &p_;
  Layout layout_;
  const std::vector<UniformView<T>> &uniformOf_;
  std::vector<T> scratch_;
  std::vector<T *> reg_;
  int64_t begin_ = 0, count_ = 0, uniformStep_ = -1;
};

template <typename T> void BlockEvaluator<T>::evaluate(int32_t r) {
  const NeuronInstr &in = p_.code[size_t(r)];
  T *__restrict o = reg_[size_t(r)];
  const T *__restrict a = in.a >= 0 ? reg_[size_t(in.a)] : nullptr;
  const T *__restrict b = in.b >= 0 ? reg_[size_t(in.b)] : nullptr;
  const int64_t n = count_;
  switch (in.op) {
  case NeuronOp::Add:
    for (int64_t i = 0; i < n; ++i)
      o[i] = a[i] + b[i];
    return;
  case NeuronOp::Sub:
    for (int64_t i = 0; i < n; ++i)
      o[i] = a[i] - b[i];
    return;
  case NeuronOp::Mul:
    for (int64_t i = 0; i < n; ++i)
      o[i] = a[i] * b[i];
    return;
  case NeuronOp::Div:
    if (constantRegister(p_, in.a)) { // Python's c / t: reciprocal(t) * c
      const T c = T(p_.code[size_t(in.a)].value);
      for (int64_t i = 0; i < n; ++i)
        o[i] = (T(1) / b[i]) * c;
    } else {
      for (int64_t i = 0; i < n; ++i)
        o[i] = a[i] / b[i];
    }
    return;
  case NeuronOp::Neg:
    for (int64_t i = 0; i < n; ++i)
      o[i] = -a[i];
    return;
  case NeuronOp::Exp:
    for (int64_t i = 0; i < n; ++i)
      o[i] = std::exp(a[i]);
    return;
  case NeuronOp::Sigmoid:
    for (int64_t i = 0; i < n; ++i)
      o[i] = T(1) / (T(1) + std::exp(-a[i]));
    return;
  case NeuronOp::Relu:
    for (int64_t i = 0; i < n; ++i)
      o[i] = a[i] > T(0) ? a[i] : T(0);
    return;
  case NeuronOp::Tanh:
    for (int64_t i = 0; i < n; ++i)
      o[i] = std::tanh(a[i]);
    return;
  case NeuronOp::Fire:
    for (int64_t i = 0; i < n; ++i)
      o[i] = T(a[i] >= T(0));
    return;
  case NeuronOp::Detach:
    std::copy(a, a + n, o);
    return;
  case NeuronOp::SpikeCount: { // torch.round(torch.clamp(a, 0, D)): half to even
    const T levels = T(in.index);
    for (int64_t i = 0; i < n; ++i)
      o[i] = std::nearbyint(std::min(std::max(a[i], T(0)), levels));
    return;
  }
  default: // Const, Input, State, Operand: loaded, not computed
    return;
  }
}

template <typename T>
void BlockEvaluator<T>::differentiateBinary(int32_t r, T *adj) const {
  const NeuronInstr &in = p_.code[size_t(r)];
  const T *__restrict g = adj + size_t(r) * size_t(kBlock);
  // Constants have no adjoint: their loops are skipped.
  auto adjointOf = [&](int32_t operand) -> T * {
    return operand >= 0 && !constantRegister(p_, operand) ? adj + size_t(operand) * size_t(kBlock)
                                                           : nullptr;
  };
  T *ga = adjointOf(in.a), *gb = adjointOf(in.b);
  const T *__restrict a = in.a >= 0 ? reg_[size_t(in.a)] : nullptr;
  const T *__restrict b = in.b >= 0 ? reg_[size_t(in.b)] : nullptr;
  const int64_t n = count_;
  // x * x, or a register read twice: ga and gb may be one array, so each
  // operand's update is its own loop.
  switch (in.op) {
  case NeuronOp::Add:
    if (ga)
      for (int64_t i = 0; i < n; ++i)
        ga[i] += g[i];
    if (gb)
      for (int64_t i = 0; i < n; ++i)
        gb[i] += g[i];
    return;
  case NeuronOp::Sub:
    if (ga)
      for (int64_t i = 0; i < n; ++i)
        ga[i] += g[i];
    if (gb)
      for (int64_t i = 0; i < n; ++i)
        gb[i] -= g[i];
    return;
  case NeuronOp::Mul: // PyTorch: grad * other, grad * self
    if (ga)
      for (int64_t i = 0; i < n; ++i)
        ga[i] += g[i] * b[i];
    if (gb)
      for (int64_t i = 0; i < n; ++i)
        gb[i] += g[i] * a[i];
    return;
  case NeuronOp::Div: // grad / other, -grad * ((self / other) / other)
    if (constantRegister(p_, in.a)) {
      const T c = T(p_.code[size_t(in.a)].value);
      for (int64_t i = 0; i < n; ++i) { // d(c / b)/db = -c / b^2
        T inv = T(1) / b[i];
        gb[i] += -(g[i] * c) * (inv * inv);
      }
      return;
    }
    if (ga)
      for (int64_t i = 0; i < n; ++i)
        ga[i] += g[i] / b[i];
    if (gb)
      for (int64_t i = 0; i < n; ++i)
        gb[i] += -g[i] * ((a[i] / b[i]) / b[i]);
    return;
  default:
    return;
  }
}

template <typename T>
void BlockEvaluator<T>::differentiate(int32_t r, T *adj, Surrogate surrogate, T alpha,
                                      T beta) const {
  const NeuronInstr &in = p_.code[size_t(r)];
  if (in.a < 0) // a leaf: the input, a state
    return;
  if (in.b >= 0)
    return differentiateBinary(r, adj);
  const T *__restrict g = adj + size_t(r) * size_t(kBlock);
  // A unary op's operand varies (one of a constant is folded): it has an adjoint.
  T *__restrict ga = adj + size_t(in.a) * size_t(kBlock);
  const T *__restrict a = reg_[size_t(in.a)];
  const T *__restrict o = reg_[size_t(r)];
  const int64_t n = count_;
  switch (in.op) {
  case NeuronOp::Neg:
    for (int64_t i = 0; i < n; ++i)
      ga[i] -= g[i];
    return;
  case NeuronOp::Exp:
    for (int64_t i = 0; i < n; ++i)
      ga[i] += g[i] * o[i];
    return;
  case NeuronOp::Sigmoid:
    for (int64_t i = 0; i < n; ++i)
      ga[i] += g[i] * (T(1) - o[i]) * o[i];
    return;
  case NeuronOp::Tanh:
    for (int64_t i = 0; i < n; ++i)
      ga[i] += g[i] * (T(1) - o[i] * o[i]);
    return;
  case NeuronOp::Relu:
    for (int64_t i = 0; i < n; ++i)
      ga[i] += o[i] > T(0) ? g[i] : T(0);
    return;
  case NeuronOp::Fire:
    visitSurrogateMath<T>(surrogate, [&](auto f) {
      for (int64_t i = 0; i < n; ++i)
        ga[i] += g[i] * f(a[i], alpha, beta);
    });
    return;
  case NeuronOp::SpikeCount: { // straight through inside [low, high]
    const T low = T(in.value), high = T(in.upper);
    for (int64_t i = 0; i < n; ++i)
      ga[i] += a[i] >= low && a[i] <= high ? g[i] : T(0);
    return;
  }
  default: // Detach stops the gradient; leaves have no operands
    return;
  }
}

/// The kernels of one call: the program's shape, the tensors' memory.
template <typename T> struct Kernel {
  const GenericNeuron &neuron;
  Layout layout;
  std::vector<UniformView<T>> uniformOf; // by register; data null when not uniform

  const NeuronProgram &program() const { return neuron.program(); }
  int64_t chunk() const {
    return std::max<int64_t>(kBlock, kMinWorkPerChunk / std::max<int64_t>(layout.steps, 1));
  }
  int64_t blocks() const { return (layout.perStep + kBlock - 1) / kBlock; }

  int64_t forward(const T *x, T *out, T *saved) const;
  void backward(const T *gradOut, const T *x, const T *saved, T *gradX,
                std::vector<std::vector<double>> &gradUniforms) const;
  /// Adds step t's dL/d of every uniform over elements [begin, begin + count) to the
  /// block's slot (per channel for a per-channel uniform).
  void addUniformGradients(const T *adj, int64_t block, int64_t t, int64_t begin,
                           int64_t count, std::vector<std::vector<double>> &partial) const;
};

template <typename T> int64_t Kernel<T>::forward(const T *x, T *out, T *saved) const {
  const NeuronProgram &p = program();
  const size_t states = neuron.stateCount();
  const int64_t M = layout.perStep, steps = layout.steps;
  std::atomic<int64_t> fired{0};
  at::parallel_for(0, M, chunk(), [&](int64_t first, int64_t last) {
    BlockEvaluator<T> eval(neuron, layout, uniformOf);
    std::vector<T> current(states * kBlock), next(states * kBlock);
    std::vector<const T *> statePtr(states);
    int64_t chunkFired = 0;
    for (int64_t begin = first; begin < last; begin += kBlock) {
      int64_t count = std::min(kBlock, last - begin);
      eval.setBlock(begin, count);
      for (size_t j = 0; j < states; ++j) {
        std::fill_n(current.data() + j * kBlock, count, T(neuron.stateInit()[j]));
        statePtr[j] = current.data() + j * kBlock;
      }
      for (int64_t t = 0; t < steps; ++t) {
        int64_t offset = t * M + begin;
        if (saved)
          for (size_t j = 0; j < states; ++j)
            std::copy_n(statePtr[j], count, saved + (int64_t(j) * steps) * M + offset);
        eval.loadUniforms(t);
        eval.forward(x + offset, statePtr);
        std::copy_n(eval.value(p.output), count, out + offset);
        if (p.spikes >= 0) {
          const T *s = eval.value(p.spikes);
          int32_t stepFired = 0;
          for (int64_t i = 0; i < count; ++i)
            stepFired += s[i] != T(0);
          chunkFired += stepFired;
        }
        for (size_t j = 0; j < states; ++j)
          std::copy_n(eval.value(p.stateNext[j]), count, next.data() + j * kBlock);
        std::swap(current, next);
        for (size_t j = 0; j < states; ++j)
          statePtr[j] = current.data() + j * kBlock;
      }
    }
    fired += chunkFired;
  });
  return fired.load();
}

template <typename T>
void Kernel<T>::backward(const T *gradOut, const T *x, const T *saved, T *gradX,
                         std::vector<std::vector<double>> &gradUniforms) const {
  const NeuronProgram &p = program();
  const size_t states = neuron.stateCount(), registers = p.code.size();
  const int64_t M = layout.perStep, steps = layout.steps, blockCount = blocks();
  // Each block's uniform gradients in its own slot, summed in block order
  // below: the same result for any thread count.
  std::vector<std::vector<double>> partial(uniformOf.size());
  for (size_t r = 0; r < uniformOf.size(); ++r)
    if (uniformOf[r].data)
      partial[r].assign(size_t(blockCount * uniformOf[r].size(steps)), 0.0);
  const T alpha = T(neuron.alpha()), beta = T(neuron.beta());
  // The registers with an adjoint: the varying ones and the uniforms (constants have none).
  std::vector<int32_t> differentiated;
  for (size_t r = 0; r < registers; ++r)
    if (p.varies[r] || uniformOf[r].data)
      differentiated.push_back(int32_t(r));
  int64_t grain = std::max<int64_t>(1, chunk() / kBlock);
  at::parallel_for(0, blockCount, grain, [&](int64_t firstBlock, int64_t lastBlock) {
    BlockEvaluator<T> eval(neuron, layout, uniformOf);
    std::vector<T> adj(registers * kBlock), carried(states * kBlock);
    std::vector<const T *> statePtr(states);
    for (int64_t block = firstBlock; block < lastBlock; ++block) {
      int64_t begin = block * kBlock, count = std::min(kBlock, M - begin);
      eval.setBlock(begin, count);
      std::fill(carried.begin(), carried.end(), T(0));
      for (int64_t t = steps - 1; t >= 0; --t) {
        int64_t offset = t * M + begin;
        for (size_t j = 0; j < states; ++j)
          statePtr[j] = saved + (int64_t(j) * steps) * M + offset;
        eval.loadUniforms(t);
        eval.forward(x + offset, statePtr);
        for (int32_t r : differentiated) // only what the sweep reads or writes
          std::fill_n(adj.data() + size_t(r) * kBlock, count, T(0));
        T *gOut = adj.data() + size_t(p.output) * kBlock;
        for (int64_t i = 0; i < count; ++i)
          gOut[i] += gradOut[offset + i];
        for (size_t j = 0; j < states; ++j) {
          T *g = adj.data() + size_t(p.stateNext[j]) * kBlock;
          const T *c = carried.data() + j * kBlock;
          for (int64_t i = 0; i < count; ++i)
            g[i] += c[i];
        }
        eval.backward(adj.data(), neuron.surrogate(), alpha, beta);
        std::copy_n(adj.data() + size_t(p.input) * kBlock, count, gradX + offset);
        for (size_t j = 0; j < states; ++j) {
          T *c = carried.data() + j * kBlock;
          if (p.stateRead[j] >= 0)
            std::copy_n(adj.data() + size_t(p.stateRead[j]) * kBlock, count, c);
          else
            std::fill_n(c, count, T(0));
        }
        addUniformGradients(adj.data(), block, t, begin, count, partial);
      }
    }
  });
  gradUniforms.assign(uniformOf.size(), {});
  for (size_t r = 0; r < uniformOf.size(); ++r) {
    if (!uniformOf[r].data)
      continue;
    size_t size = size_t(uniformOf[r].size(steps));
    gradUniforms[r].assign(size, 0.0);
    for (int64_t block = 0; block < blockCount; ++block)
      for (size_t k = 0; k < size; ++k)
        gradUniforms[r][k] += partial[r][size_t(block) * size + k];
  }
}

template <typename T>
void Kernel<T>::addUniformGradients(const T *adj, int64_t block, int64_t t, int64_t begin,
                                    int64_t count,
                                    std::vector<std::vector<double>> &partial) const {
  for (size_t r = 0; r < uniformOf.size(); ++r) {
    const UniformView<T> &u = uniformOf[r];
    if (!u.data)
      continue;
    const T *g = adj + r * kBlock;
    double *slot = partial[r].data() + block * u.size(layout.steps) +
                   (u.perStep ? t * u.channels : 0);
    if (u.channels == 1) {
      double sum = 0.0;
      for (int64_t i = 0; i < count; ++i)
        sum += double(g[i]);
      slot[0] += sum;
    } else {
      for (int64_t i = 0; i < count; ++i)
        slot[((begin + i) / layout.inner) % layout.channels] += double(g[i]);
    }
  }
}

void requireFloating(const at::Tensor &t, at::ScalarType type, const std::string &what) {
  if (t.scalar_type() != type || !t.device().is_cpu())
    throw Error(what + " must be a " + std::string(c10::toString(type)) + " CPU tensor, got " +
                std::string(c10::toString(t.scalar_type())));
}

Layout layoutOf(const at::Tensor &x) {
  if (x.dim() < 2)
    throw Error("neuron input must be [T, N, ...], got " + formatShape(x.sizes()));
  Layout layout;
  layout.steps = x.size(0);
  layout.perStep = layout.steps > 0 ? x.numel() / layout.steps : 0;
  if (x.dim() > 2) {
    layout.channels = x.size(2);
    layout.inner = 1;
    for (int64_t d = 3; d < x.dim(); ++d)
      layout.inner *= x.size(d);
  }
  return layout;
}

/// The kernels' view of `uniforms` (contiguous copies kept in `keep`).
template <typename T>
Kernel<T> makeKernel(const GenericNeuron &neuron, const at::Tensor &x,
                     const std::vector<at::Tensor> &uniforms, std::vector<at::Tensor> &keep) {
  const std::vector<int32_t> &registers = neuron.uniformRegisters();
  if (uniforms.size() != registers.size())
    throw Error("neuron: " + std::to_string(registers.size()) + " uniforms expected, got " +
                std::to_string(uniforms.size()));
  Kernel<T> kernel{neuron, layoutOf(x), {}};
  kernel.uniformOf.resize(neuron.program().code.size());
  for (size_t k = 0; k < registers.size(); ++k) {
    at::Tensor u = uniforms[k].detach().contiguous();
    std::string name = "neuron uniform " + neuron.program().print(registers[k]);
    requireFloating(u, x.scalar_type(), name);
    UniformView<T> view;
    if (u.dim() > 2)
      throw Error(name + " must be [], [C] or [T, C], got " + formatShape(u.sizes()));
    if (u.dim() >= 1)
      view.channels = u.size(-1);
    if (u.dim() == 2) {
      view.perStep = true;
      if (u.size(0) != kernel.layout.steps)
        throw Error(name + " has " + std::to_string(u.size(0)) + " steps, the input " +
                    std::to_string(kernel.layout.steps));
    }
    if (view.channels != 1 && view.channels != kernel.layout.channels)
      throw Error(name + " has " + std::to_string(view.channels) + " channels, the input " +
                  formatShape(x.sizes()) + " " + std::to_string(kernel.layout.channels));
    view.data = u.data_ptr<T>();
    keep.push_back(u);
    kernel.uniformOf[size_t(registers[k])] = view;
  }
  return kernel;
}

template <typename T>
GenericNeuronForwardResult forwardTyped(const GenericNeuron &neuron, const at::Tensor &x,
                                        const std::vector<at::Tensor> &uniforms, bool saveStates) {
  std::vector<at::Tensor> keep;
  Kernel<T> kernel = makeKernel<T>(neuron, x, uniforms, keep);
  GenericNeuronForwardResult result;
  result.output = at::empty(x.sizes(), x.options());
  if (saveStates) {
    std::vector<int64_t> shape{int64_t(neuron.stateCount())};
    shape.insert(shape.end(), x.sizes().begin(), x.sizes().end());
    result.states = at::empty(shape, x.options());
  }
  if (x.numel() == 0)
    return result;
  result.fired = kernel.forward(x.data_ptr<T>(), result.output.data_ptr<T>(),
                                saveStates ? result.states.data_ptr<T>() : nullptr);
  return result;
}

template <typename T>
GenericNeuronBackwardResult backwardTyped(const GenericNeuron &neuron, const at::Tensor &grad,
                                          const at::Tensor &x, const at::Tensor &states,
                                          const std::vector<at::Tensor> &uniforms) {
  std::vector<at::Tensor> keep;
  Kernel<T> kernel = makeKernel<T>(neuron, x, uniforms, keep);
  GenericNeuronBackwardResult result;
  result.gradX = at::empty(x.sizes(), x.options());
  std::vector<std::vector<double>> sums;
  if (x.numel() > 0)
    kernel.backward(grad.data_ptr<T>(), x.data_ptr<T>(), states.data_ptr<T>(),
                    result.gradX.data_ptr<T>(), sums);
  const std::vector<int32_t> &registers = neuron.uniformRegisters();
  for (size_t k = 0; k < registers.size(); ++k) {
    at::Tensor g = at::zeros(uniforms[k].sizes(), x.options());
    if (x.numel() > 0) {
      const std::vector<double> &sum = sums[size_t(registers[k])];
      T *data = g.data_ptr<T>();
      for (size_t i = 0; i < sum.size(); ++i)
        data[i] = T(sum[i]);
    }
    result.gradUniforms.push_back(g);
  }
  return result;
}

} // namespace

at::Tensor evaluateInstruction(const NeuronProgram &p, const NeuronInstr &in,
                           const std::vector<at::Tensor> &values,
                           const std::vector<at::Tensor> &operands) {
  auto isConst = [&](int32_t r) { return constantRegister(p, r); };
  auto scalar = [&](int32_t r) { return at::Scalar(p.code[size_t(r)].value); };
  const at::Tensor &a = in.a >= 0 ? values[size_t(in.a)] : values[0];
  const at::Tensor &b = in.b >= 0 ? values[size_t(in.b)] : values[0];
  switch (in.op) {
  case NeuronOp::Operand: { // a per-step [T] operand is [T, 1]: one value per step
    const at::Tensor &operand = operands[size_t(in.index)];
    return p.operandPerStep[size_t(in.index)] && operand.dim() == 1 ? operand.unsqueeze(1)
                                                                    : operand;
  }
  case NeuronOp::Add:
    return isConst(in.a)   ? at::add(b, scalar(in.a))
           : isConst(in.b) ? at::add(a, scalar(in.b))
                           : at::add(a, b);
  case NeuronOp::Sub:
    return isConst(in.a)   ? at::rsub(b, scalar(in.a))
           : isConst(in.b) ? at::sub(a, scalar(in.b))
                           : at::sub(a, b);
  case NeuronOp::Mul:
    return isConst(in.a)   ? at::mul(b, scalar(in.a))
           : isConst(in.b) ? at::mul(a, scalar(in.b))
                           : at::mul(a, b);
  case NeuronOp::Div:
    return isConst(in.a)   ? at::mul(at::reciprocal(b), scalar(in.a))
           : isConst(in.b) ? at::div(a, scalar(in.b))
                           : at::div(a, b);
  case NeuronOp::Neg:
    return at::neg(a);
  case NeuronOp::Exp:
    return at::exp(a);
  case NeuronOp::Sigmoid:
    return at::sigmoid(a);
  case NeuronOp::Relu:
    return at::relu(a);
  case NeuronOp::Tanh:
    return at::tanh(a);
  case NeuronOp::Detach:
    return a.detach();
  default:
    throw Error(std::string("neuron: '") + schema::neuronOpName(in.op) +
                "' is not evaluated with ATen ops");
  }
}


GenericNeuron::GenericNeuron(NeuronProgram program, std::vector<double> stateInit,
                             Surrogate surrogate, float alpha, float beta)
    : program_(std::move(program)), stateInit_(std::move(stateInit)), surrogate_(surrogate),
      alpha_(alpha), beta_(beta) {
  if (stateInit_.size() != program_.stateNext.size())
    throw Error("neuron: " + std::to_string(program_.stateNext.size()) + " states but " +
                std::to_string(stateInit_.size()) + " initial values");
  std::vector<bool> needed(program_.code.size(), false);
  for (size_t r = 0; r < program_.code.size(); ++r) {
    if (!program_.varies[r])
      continue;
    for (int32_t operand : {program_.code[r].a, program_.code[r].b})
      if (operand >= 0)
        needed[size_t(operand)] = true;
  }
  for (int32_t next : program_.stateNext)
    needed[size_t(next)] = true;
  for (size_t r = 0; r < program_.code.size(); ++r)
    if (needed[r] && !program_.varies[r] && !constantRegister(program_, int32_t(r)))
      uniformRegisters_.push_back(int32_t(r));
}

std::vector<at::Tensor>
GenericNeuron::evaluateUniforms(const std::vector<at::Tensor> &operands) const {
  if (operands.size() != program_.operandNames.size())
    throw Error("neuron: " + std::to_string(program_.operandNames.size()) +
                " operands expected, got " + std::to_string(operands.size()));
  std::vector<at::Tensor> values(program_.code.size());
  for (size_t r = 0; r < program_.code.size(); ++r) {
    const NeuronInstr &in = program_.code[r];
    if (program_.varies[r] || in.op == NeuronOp::Const)
      continue;
    values[r] = evaluateInstruction(program_, in, values, operands);
  }
  std::vector<at::Tensor> uniforms;
  for (int32_t r : uniformRegisters_)
    uniforms.push_back(values[size_t(r)]);
  return uniforms;
}

GenericNeuronForwardResult genericNeuronForward(const GenericNeuron &neuron, const at::Tensor &x,
                                                const std::vector<at::Tensor> &uniforms,
                                                bool saveStates) {
  if (x.scalar_type() != at::kFloat && x.scalar_type() != at::kDouble)
    throw Error("neuron input must be float32 or float64, got " +
                std::string(c10::toString(x.scalar_type())));
  at::Tensor input = x.contiguous();
  if (input.scalar_type() == at::kDouble)
    return forwardTyped<double>(neuron, input, uniforms, saveStates);
  return forwardTyped<float>(neuron, input, uniforms, saveStates);
}

GenericNeuronBackwardResult genericNeuronBackward(const GenericNeuron &neuron,
                                                  const at::Tensor &gradOutput, const at::Tensor &x,
                                                  const at::Tensor &states,
                                                  const std::vector<at::Tensor> &uniforms) {
  std::vector<int64_t> stateShape{int64_t(neuron.stateCount())};
  stateShape.insert(stateShape.end(), x.sizes().begin(), x.sizes().end());
  if (gradOutput.sizes() != x.sizes() || states.sizes() != at::IntArrayRef(stateShape) ||
      gradOutput.scalar_type() != x.scalar_type() || states.scalar_type() != x.scalar_type())
    throw Error("neuron backward: gradient " + formatShape(gradOutput.sizes()) + ", input " +
                formatShape(x.sizes()) + " and saved states " + formatShape(states.sizes()) +
                " do not match");
  at::Tensor grad = gradOutput.contiguous(), input = x.contiguous(), saved = states.contiguous();
  if (input.scalar_type() == at::kDouble)
    return backwardTyped<double>(neuron, grad, input, saved, uniforms);
  return backwardTyped<float>(neuron, grad, input, saved, uniforms);
}

} // namespace snn::runtime
