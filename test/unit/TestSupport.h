//===- TestSupport.h - Temp dirs and tiny artifacts for runtime tests -*- C++ -*-===//
//
// Tests build their artifacts in C++ (ModelProto + manifest.json) so that the
// unit tests need neither Python nor the compiler.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_TEST_UNIT_TESTSUPPORT_H
#define SNN_TEST_UNIT_TESTSUPPORT_H

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include <functional>
#include <string>
#include <vector>

namespace snn::test {

/// The message of the snn::runtime::Error that `body` throws; "" when it throws none.
std::string errorOf(const std::function<void()> &body);

// Tolerances for results that differ only in the order of float32 sums (another
// BLAS kernel, a split GEMM, another reduction): derived from the number of
// summed terms and float32's epsilon, so that they hold for any order, not only
// the one this machine's kernel happens to use.

/// gamma(n) = n*eps / (1 - n*eps), eps = float32's 2^-23: a float32 sum of n
/// terms in any order is within gamma(n) * sum|term| of the exact sum (the
/// standard bound, Higham, "Accuracy and Stability of Numerical Algorithms",
/// 4.2; n - 1 additions, plus one rounding of each product).
double float32Gamma(int64_t terms);

/// Two float32 evaluations of the same sums of `terms` terms, each in any
/// order, differ element-wise by at most 2 * gamma(terms) * magnitude, where
/// `magnitude` is sum|term| per element (|A| @ |B| for A @ B, computed in
/// float64). Expects that of `actual` and `expected`.
void expectSameSumUpToOrder(const at::Tensor &actual,
                            const at::Tensor &expected,
                            const at::Tensor &magnitude, int64_t terms);

/// A fresh directory under the system temp dir, removed with its contents.
class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  const std::string &path() const { return dir; }
  std::string file(const std::string &name) const;

private:
  std::string dir;
};

std::string readFile(const std::string &path);
void writeFile(const std::string &path, const std::string &bytes);

onnx::AttributeProto floatAttr(const std::string &name, float value);
onnx::AttributeProto intAttr(const std::string &name, int64_t value);
onnx::AttributeProto intsAttr(const std::string &name,
                              std::vector<int64_t> values);
onnx::AttributeProto stringAttr(const std::string &name,
                                const std::string &value);

/// Builds a program ModelProto as snn-translate writes it: opset spikemesh 1,
/// graph input "input", values v0, v1, ..., graph output "output".
class ProgramBuilder {
public:
  ProgramBuilder();

  /// Adds a float32 initializer (raw_data, or float_data if !raw).
  void addInitializer(const std::string &name, const at::Tensor &value,
                      bool raw = true);
  /// Adds a node and returns its output value name. `output` overrides the
  /// generated name (use "output" for the last node).
  std::string addNode(const std::string &opType,
                      const std::vector<std::string> &inputs,
                      const std::vector<onnx::AttributeProto> &attributes = {},
                      const std::string &output = "");

  /// A node without outputs (send); returns nothing to use.
  void addSink(const std::string &opType, const std::vector<std::string> &inputs,
               const std::vector<onnx::AttributeProto> &attributes = {});
  /// Pipeline stage programs: without the graph input / output.
  void dropGraphInput();
  void dropGraphOutput();
  /// value_info for `value` (-1: a dimension without a fixed size).
  void declareShape(const std::string &value, const std::vector<int64_t> &shape);

  onnx::ModelProto &model() { return proto; }
  std::string serialize() const;

private:
  onnx::ModelProto proto;
  int nextValue = 0;
};

/// A single-rank manifest for program_0.onnx.
nlohmann::json makeManifest(const std::vector<int64_t> &inputShape,
                            const std::vector<int64_t> &outputShape,
                            bool outputTimeMajor);

/// Writes DIR/manifest.json and DIR/program_0.onnx.
void writeArtifact(const std::string &dir, const ProgramBuilder &program,
                   const nlohmann::json &manifest);

/// Every Linear and conv2d of the process on the dense kernels while this
/// lives, then the choice as it was: for comparisons with a split backward,
/// whose deferred weight gradients are dense GEMMs (the event-driven kernels
/// add in another order).
class DenseKernels {
public:
  DenseKernels();
  ~DenseKernels();
  DenseKernels(const DenseKernels &) = delete;
  DenseKernels &operator=(const DenseKernels &) = delete;

private:
  double linear, conv;
};

} // namespace snn::test

#endif // SNN_TEST_UNIT_TESTSUPPORT_H
