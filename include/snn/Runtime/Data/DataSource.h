//===- DataSource.h - The datasets named on the command line ----*- C++ -*-===//
#ifndef SNN_RUNTIME_DATA_DATASOURCE_H
#define SNN_RUNTIME_DATA_DATASOURCE_H

#include "snn/Runtime/Data/Dataset.h"

#include <optional>
#include <string>

namespace snn::runtime {

/// `--data fashion-mnist[:DIR]`, `--data-npy X.npy,Y.npy` and
/// `--eval-data-npy X.npy,Y.npy`, as given.
struct DataOptions {
  std::string data;
  std::string dataNpy;
  std::string evalDataNpy;
};

/// The training split and, when there is one, the eval split: Fashion-MNIST
/// train and t10k, or --data-npy and --eval-data-npy.
struct DataSplits {
  Dataset train;
  std::optional<Dataset> eval;
};

/// Loads what `options` names for training. Throws Error naming the flag for
/// a malformed value or a missing or conflicting source.
DataSplits loadTrainingData(const DataOptions &options);

/// The split `snn-run eval` measures: Fashion-MNIST's t10k, or --data-npy.
Dataset loadEvaluationData(const DataOptions &options);

} // namespace snn::runtime

#endif // SNN_RUNTIME_DATA_DATASOURCE_H
