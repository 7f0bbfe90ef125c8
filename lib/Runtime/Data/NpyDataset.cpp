//===- NpyDataset.cpp - Datasets from NumPy files -------------------------===//

#include "snn/Runtime/Data/Dataset.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/Npy.h"
#include "snn/Runtime/Support/TensorIO.h"

#include <ATen/ops/empty.h>

#include <cstring>

namespace snn::runtime {

namespace {

/// Class indices as int64, from little-endian int64 or int32.
at::Tensor readLabels(const std::string &path) {
  NpyRawArray raw = readNpyRaw(path);
  if (raw.descr != "<i8" && raw.descr != "<i4")
    throw Error(path + ": dtype '" + raw.descr +
                "' is not supported for labels; expected int64 ('<i8') or "
                "int32 ('<i4'): convert with y.astype(numpy.int64)");
  if (raw.shape.size() != 1)
    throw Error(path + ": labels must be a 1-D array [S], got " +
                formatShape(raw.shape));
  int64_t count = raw.shape[0];
  at::Tensor labels = at::empty({count}, at::kLong);
  int64_t *out = labels.data_ptr<int64_t>();
  if (raw.itemSize == 8) {
    std::memcpy(out, raw.bytes.data(), raw.bytes.size());
    return labels;
  }
  for (int64_t i = 0; i < count; ++i) {
    int32_t value;
    std::memcpy(&value, raw.bytes.data() + 4 * i, 4);
    out[i] = value;
  }
  return labels;
}

} // namespace

Dataset loadNpyDataset(const std::string &xPath, const std::string &yPath) {
  Dataset dataset;
  dataset.name = xPath;
  dataset.labelsName = yPath;
  dataset.samples = readTensorNpy(xPath);
  if (dataset.samples.dim() < 2)
    throw Error(xPath +
                ": samples must be [S, ...] with at least one dim "
                "per sample, got " +
                formatShape(dataset.samples.sizes()));
  dataset.labels = readLabels(yPath);
  if (dataset.samples.size(0) != dataset.labels.size(0))
    throw Error(xPath + ", " + yPath + ": X holds " +
                std::to_string(dataset.samples.size(0)) + " samples but Y " +
                std::to_string(dataset.labels.size(0)) + " labels");
  return dataset;
}

} // namespace snn::runtime
