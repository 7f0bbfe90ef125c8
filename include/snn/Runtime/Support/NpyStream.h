//===- NpyStream.h - float32 .npy files a slab at a time --------*- C++ -*-===//
//
// `snn-run infer --batch-size N` streams an input larger than memory through the program: it
// reads N samples at a time and writes each chunk of the output where it belongs, so only one
// chunk of each is ever held. A slab is a range of one dimension (the batch dimension: 1 of a
// time-major [T, N, ...] array, 0 of [N, ...]) with all of the others. Free of LibTorch, like
// Npy.h.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_SUPPORT_NPYSTREAM_H
#define SNN_RUNTIME_SUPPORT_NPYSTREAM_H

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace snn::runtime {

/// A float32 .npy file opened for slab reads; the header and the file size are checked when
/// it opens (the same errors as readNpy), the data is read only as asked for.
class NpyChunkReader {
public:
  explicit NpyChunkReader(const std::string &path);

  const std::vector<int64_t> &shape() const { return shape_; }

  /// Elements [first, first + count) of dimension `dim` with all of the others, in C order
  /// (the slab's shape is shape() with that dimension set to `count`).
  std::vector<float> read(size_t dim, int64_t first, int64_t count);

private:
  std::string path;
  std::ifstream in;
  std::vector<int64_t> shape_;
  std::streamoff dataStart = 0;
};

/// A float32 .npy file of a known shape written slab by slab, in any order. It is written to a
/// temporary beside `path` and appears at `path` only when finish() finds every element
/// written; otherwise the destructor removes the temporary, so a failed run never leaves a
/// partial output.
class NpyChunkWriter {
public:
  NpyChunkWriter(const std::string &path, std::vector<int64_t> shape);
  ~NpyChunkWriter();
  NpyChunkWriter(const NpyChunkWriter &) = delete;
  NpyChunkWriter &operator=(const NpyChunkWriter &) = delete;

  const std::vector<int64_t> &shape() const { return shape_; }

  /// Writes the slab [first, first + count) of dimension `dim` (C order, as read() returns);
  /// every slab of one file is along the same dimension, each index written once.
  void write(size_t dim, int64_t first, int64_t count, const float *data);

  /// Moves the file to its path; throws if some slab was never written.
  void finish();

private:
  std::string path, temp;
  std::ofstream out;
  std::vector<int64_t> shape_;
  std::streamoff dataStart = 0;
  size_t slabDim = 0;
  std::vector<bool> done; ///< per index of slabDim, once the first slab is written
  bool finished = false;
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_SUPPORT_NPYSTREAM_H
