//===- DataSource.cpp - The datasets named on the command line ------------===//

#include "snn/Runtime/Data/DataSource.h"
#include "snn/Runtime/Support/Error.h"

namespace snn::runtime {

namespace {

/// The directory of `--data fashion-mnist[:DIR]`.
std::string fashionMnistDir(const std::string &value) {
  const std::string name = "fashion-mnist";
  if (value == name)
    return kFashionMnistDir;
  if (value.compare(0, name.size() + 1, name + ":") == 0 &&
      value.size() > name.size() + 1)
    return value.substr(name.size() + 1);
  throw Error("--data: unknown dataset '" + value +
              "' (expected fashion-mnist or fashion-mnist:DIR)");
}

Dataset loadNpyPair(const std::string &flag, const std::string &value) {
  size_t comma = value.find(',');
  if (comma == std::string::npos || comma == 0 || comma + 1 == value.size() ||
      value.find(',', comma + 1) != std::string::npos)
    throw Error(flag + " takes X.npy,Y.npy, got '" + value + "'");
  return loadNpyDataset(value.substr(0, comma), value.substr(comma + 1));
}

void checkOneSource(const DataOptions &options) {
  if (!options.data.empty() && !options.dataNpy.empty())
    throw Error("--data and --data-npy exclude each other");
  if (options.data.empty() && options.dataNpy.empty())
    throw Error("no data: pass --data fashion-mnist[:DIR] or --data-npy "
                "X.npy,Y.npy");
  if (!options.data.empty() && !options.evalDataNpy.empty())
    throw Error("--eval-data-npy goes with --data-npy (Fashion-MNIST "
                "evaluates on its t10k split)");
}

} // namespace

DataSplits loadTrainingData(const DataOptions &options) {
  checkOneSource(options);
  DataSplits splits;
  if (!options.data.empty()) {
    std::string dir = fashionMnistDir(options.data);
    splits.train = loadFashionMnist(dir, "train");
    splits.eval = loadFashionMnist(dir, "t10k");
    return splits;
  }
  splits.train = loadNpyPair("--data-npy", options.dataNpy);
  if (!options.evalDataNpy.empty())
    splits.eval = loadNpyPair("--eval-data-npy", options.evalDataNpy);
  return splits;
}

Dataset loadEvaluationData(const DataOptions &options) {
  checkOneSource(options);
  if (!options.data.empty())
    return loadFashionMnist(fashionMnistDir(options.data), "t10k");
  return loadNpyPair("--data-npy", options.dataNpy);
}

} // namespace snn::runtime
