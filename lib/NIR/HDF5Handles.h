//===- HDF5Handles.h - HDF5 C handles closed by scope -------------*- C++ -*-===//
#ifndef SNN_LIB_NIR_HDF5HANDLES_H
#define SNN_LIB_NIR_HDF5HANDLES_H

#include <hdf5.h>

namespace snn::nir {

/// An HDF5 handle closed by `close` when it goes out of scope.
class Handle {
public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Handle(const Handle &) = delete;
  Handle &operator=(const Handle &) = delete;
  ~Handle() {
    if (id_ >= 0)
      close_(id_);
  }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

/// Silences HDF5's own error printing while the reader runs: every failure
/// becomes one line of ours.
class QuietErrors {
public:
  QuietErrors() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

private:
  H5E_auto2_t func_ = nullptr;
  void *data_ = nullptr;
};

} // namespace snn::nir

#endif // SNN_LIB_NIR_HDF5HANDLES_H
