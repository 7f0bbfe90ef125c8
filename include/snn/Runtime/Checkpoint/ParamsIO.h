//===- ParamsIO.h - Parameters as one .npy file each ------------*- C++ -*-===//
//
// `--save-params DIR` writes NAME.npy (float32) for every parameter and
// buffer, the layout snnexport.train.save_params uses, so NumPy and the
// PyTorch reference read trained weights directly; `snn-run eval --params`
// reads them back.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_CHECKPOINT_PARAMSIO_H
#define SNN_RUNTIME_CHECKPOINT_PARAMSIO_H

#include "snn/Runtime/Execution/ParameterPartition.h"
#include "snn/Runtime/Execution/ParameterStore.h"

#include <string>

namespace snn::runtime {

/// Creates `dir` if needed and writes one NAME.npy per entry (each atomically).
void saveParamsNpy(const std::string &dir, const ParameterStore &store);

/// Sets every entry of `store` from DIR/NAME.npy; throws Error naming the
/// file if one is missing or has another shape. With `partition` (a
/// partitioned artifact's rank) the files hold whole tensors and a split
/// entry takes this rank's part.
void loadParamsNpy(const std::string &dir, ParameterStore &store,
                   const ParameterPartition *partition = nullptr);

} // namespace snn::runtime

#endif // SNN_RUNTIME_CHECKPOINT_PARAMSIO_H
