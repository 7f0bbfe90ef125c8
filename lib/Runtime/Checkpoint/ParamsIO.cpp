//===- ParamsIO.cpp - Parameters as one .npy file each --------------------===//

#include "snn/Runtime/Checkpoint/ParamsIO.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/TensorIO.h"

#include <filesystem>

namespace snn::runtime {

namespace fs = std::filesystem;

namespace {

std::string fileFor(const std::string &dir, const std::string &name) {
  // Parameter names are module paths ("conv.0.weight"); a '/' would silently
  // write into a subdirectory.
  if (name.empty() || name.find('/') != std::string::npos)
    throw Error("parameter '" + name + "' cannot be stored as a file name");
  return (fs::path(dir) / (name + ".npy")).string();
}

} // namespace

void saveParamsNpy(const std::string &dir, const ParameterStore &store) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw Error("--save-params: cannot create '" + dir + "': " + ec.message());
  for (const ParameterStore::Entry &entry : store.entries())
    writeTensorNpy(fileFor(dir, entry.name), entry.tensor.detach());
}

void loadParamsNpy(const std::string &dir, ParameterStore &store,
                   const ParameterPartition *partition) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error("--params: directory '" + dir + "' does not exist");
  for (const ParameterStore::Entry &entry : store.entries()) {
    std::string path = fileFor(dir, entry.name);
    if (!fs::exists(path, ec))
      throw Error(path + ": missing (" + dir +
                  " must hold one NAME.npy per "
                  "parameter and buffer)");
    at::Tensor value = readTensorNpy(path);
    if (partition)
      value = partition->localPart(entry.name, value, path);
    if (value.sizes() != entry.tensor.sizes())
      throw Error(path + ": shape " + formatShape(value.sizes()) + ", " +
                  entry.name + " has " + formatShape(entry.tensor.sizes()));
    store.set(entry.name, value);
  }
}

} // namespace snn::runtime
