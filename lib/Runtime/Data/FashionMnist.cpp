//===- FashionMnist.cpp - Fashion-MNIST from its IDX gzip files -----------===//

#include "snn/Runtime/Data/Dataset.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Data/Idx.h"
#include "snn/Runtime/Support/TensorIO.h"

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>

#include <filesystem>

namespace snn::runtime {

namespace {

/// Pixels as torchvision's ToTensor makes them: float32 byte / 255.
at::Tensor imagesToTensor(const IdxArray &images) {
  int64_t count = images.shape[0], height = images.shape[1],
          width = images.shape[2];
  at::Tensor samples = at::empty({count, 1, height, width}, at::kFloat);
  float *out = samples.data_ptr<float>();
  const auto *in = reinterpret_cast<const unsigned char *>(images.data.data());
  at::parallel_for(0, int64_t(images.data.size()), 1 << 16,
                   [&](int64_t begin, int64_t end) {
                     for (int64_t i = begin; i < end; ++i)
                       out[i] = float(in[i]) / 255.0f;
                   });
  return samples;
}

at::Tensor labelsToTensor(const IdxArray &labels) {
  int64_t count = labels.shape[0];
  at::Tensor result = at::empty({count}, at::kLong);
  int64_t *out = result.data_ptr<int64_t>();
  for (int64_t i = 0; i < count; ++i)
    out[i] = static_cast<unsigned char>(labels.data[size_t(i)]);
  return result;
}

std::string splitFile(const std::string &dir, const std::string &split,
                      const char *kind) {
  return (std::filesystem::path(dir) / (split + "-" + kind + ".gz")).string();
}

} // namespace

Dataset loadFashionMnist(const std::string &dir, const std::string &split) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw Error("Fashion-MNIST directory '" + dir +
                "' does not exist (install dataset-fashion-mnist or pass "
                "--data fashion-mnist:DIR)");
  std::string imagesPath = splitFile(dir, split, "images-idx3-ubyte");
  std::string labelsPath = splitFile(dir, split, "labels-idx1-ubyte");
  IdxArray images = readIdxFile(imagesPath);
  IdxArray labels = readIdxFile(labelsPath);
  if (images.shape.size() != 3)
    throw Error(imagesPath + ": expected images [S, H, W], got " +
                formatShape(images.shape));
  if (labels.shape.size() != 1)
    throw Error(labelsPath + ": expected labels [S], got " +
                formatShape(labels.shape));
  if (images.shape[0] != labels.shape[0])
    throw Error(dir + ": " + std::to_string(images.shape[0]) + " " + split +
                " images but " + std::to_string(labels.shape[0]) + " labels");
  Dataset dataset;
  dataset.name = "fashion-mnist:" + split;
  dataset.samples = imagesToTensor(images);
  dataset.labels = labelsToTensor(labels);
  return dataset;
}

} // namespace snn::runtime
