//===- Dataset.h - Labelled samples held in memory --------------*- C++ -*-===//
//
// A dataset is two tensors: float32 samples, [S, ...] static images or
// [S, T, ...] sequences (sample-major, as NumPy files hold them), and int64
// class indices [S]. Whether samples are static or sequences is decided
// against the artifact's input (see BatchLayout.h), not here.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_DATA_DATASET_H
#define SNN_RUNTIME_DATA_DATASET_H

#include <ATen/core/Tensor.h>

#include <string>

namespace snn::runtime {

/// Where Fashion-MNIST lives when `--data fashion-mnist` names no directory
/// (Debian's dataset-fashion-mnist package).
constexpr const char *kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

struct Dataset {
  /// Names the data in messages: "fashion-mnist:train", "x.npy".
  std::string name;
  /// float32, contiguous, [S, ...].
  at::Tensor samples;
  /// int64, contiguous, [S].
  at::Tensor labels;
  /// Where the labels came from, for their errors (the labels file of a
  /// .npy pair); empty: `name`.
  std::string labelsName;

  int64_t size() const { return samples.defined() ? samples.size(0) : 0; }
};

/// Fashion-MNIST split `split` ("train" or "t10k") from DIR's IDX gzip files:
/// samples [S, 1, 28, 28] = byte / 255.0f (torchvision's ToTensor).
Dataset loadFashionMnist(const std::string &dir, const std::string &split);

/// A NumPy dataset: X float32 [S, ...] and Y int64 or int32 [S]. Throws Error
/// naming the file for a missing or malformed file, another dtype, or X and Y
/// of different lengths.
Dataset loadNpyDataset(const std::string &xPath, const std::string &yPath);

/// Throws Error naming the dataset unless every label is in [0, classes).
void checkLabels(const Dataset &dataset, int64_t classes);

} // namespace snn::runtime

#endif // SNN_RUNTIME_DATA_DATASET_H
