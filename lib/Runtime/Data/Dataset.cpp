//===- Dataset.cpp - Checks shared by every dataset -----------------------===//

#include "snn/Runtime/Data/Dataset.h"
#include "snn/Runtime/Support/Error.h"

namespace snn::runtime {

void checkLabels(const Dataset &dataset, int64_t classes) {
  const int64_t *labels = dataset.labels.data_ptr<int64_t>();
  for (int64_t i = 0; i < dataset.size(); ++i)
    if (labels[i] < 0 || labels[i] >= classes)
      throw Error((dataset.labelsName.empty() ? dataset.name : dataset.labelsName) +
                  ": label " + std::to_string(labels[i]) +
                  " of sample " + std::to_string(i) + " is not a class of " +
                  "the model's output (0 to " + std::to_string(classes - 1) +
                  ")");
}

} // namespace snn::runtime
