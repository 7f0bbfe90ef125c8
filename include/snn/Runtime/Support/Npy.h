//===- Npy.h - NumPy .npy files of float32 ----------------------*- C++ -*-===//
//
// snn-run exchanges inputs and outputs as .npy so users need nothing beyond
// NumPy. Only little-endian float32 in C order is accepted: anything else is
// an error, never a silent conversion. Kept free of LibTorch so it compiles
// fast and is testable on its own.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_SUPPORT_NPY_H
#define SNN_RUNTIME_SUPPORT_NPY_H

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace snn::runtime {

/// A dense float32 array in C order.
struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

/// Number of elements of `shape` (1 for a scalar).
int64_t numElements(const std::vector<int64_t> &shape);

/// Parses a .npy stream (format versions 1, 2 and 3). `name` is used in error
/// messages.
NpyArray parseNpy(std::istream &in, const std::string &name);

/// Reads the header of the float32 .npy stream `in`, checked as parseNpy checks it (dtype,
/// order, the data size against the bytes left), and returns its shape; `in` is left at the
/// first data byte.
std::vector<int64_t> readNpyFloatHeader(std::istream &in, const std::string &name);

/// Reads the .npy file at `path`; throws Error naming the file on failure.
NpyArray readNpy(const std::string &path);

/// A C-order .npy array of any fixed-size dtype, as raw bytes: `descr` is the
/// header's dtype string ('<i8', '<i4', ...) and `itemSize` its byte width.
/// Datasets use it for their integer labels; the caller checks the dtype.
struct NpyRawArray {
  std::string descr;
  int64_t itemSize = 0;
  std::vector<int64_t> shape;
  std::string bytes;
};

/// Reads `path` without converting or restricting the dtype (Fortran order,
/// object arrays and truncated or oversized files are still errors).
NpyRawArray readNpyRaw(const std::string &path);

/// The .npy header (magic, version, dict, padding) of a float32 array of `shape`.
std::string formatNpyHeader(const std::vector<int64_t> &shape);

/// Serialises a float32 array as .npy (version 1, or 2 for huge headers).
std::string formatNpy(const std::vector<int64_t> &shape, const float *data);

/// Writes `data` to `path` atomically: a temporary sibling file is renamed
/// over `path` at the end, so a failure never leaves a partial file.
void writeNpy(const std::string &path, const std::vector<int64_t> &shape,
              const float *data);

/// Writes `bytes` to `path` through a temporary sibling and a rename.
void writeFileAtomically(const std::string &path, const std::string &bytes);

} // namespace snn::runtime

#endif // SNN_RUNTIME_SUPPORT_NPY_H
