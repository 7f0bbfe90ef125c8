//===- Idx.h - IDX files (the MNIST family's format) ------------*- C++ -*-===//
//
// http://yann.lecun.com/exdb/mnist/: two zero bytes, a type code, the number
// of dimensions, each dimension as a big-endian uint32, then the data in C
// order. Fashion-MNIST uses unsigned bytes (type 0x08) only, so only those
// are read.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_DATA_IDX_H
#define SNN_RUNTIME_DATA_IDX_H

#include <cstdint>
#include <string>
#include <vector>

namespace snn::runtime {

/// An IDX array of unsigned bytes.
struct IdxArray {
  std::vector<int64_t> shape;
  std::string data; // numElements(shape) bytes, C order
};

/// Parses decompressed IDX bytes; `name` is used in error messages.
IdxArray parseIdx(std::string bytes, const std::string &name);

/// Reads a gzip-compressed (or plain) IDX file.
IdxArray readIdxFile(const std::string &path);

} // namespace snn::runtime

#endif // SNN_RUNTIME_DATA_IDX_H
