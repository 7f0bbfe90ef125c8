//===- NpyStream.cpp - float32 .npy files a slab at a time ----------------===//

#include "snn/Runtime/Support/NpyStream.h"
#include "snn/Runtime/Support/DurableFile.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/Npy.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace snn::runtime {

namespace {

[[noreturn]] void fail(const std::string &name, const std::string &message) {
  throw Error(name + ": " + message);
}

/// The elements of the dimensions before `dim` and of those after it.
std::pair<int64_t, int64_t> outerInner(const std::vector<int64_t> &shape, size_t dim) {
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < shape.size(); ++d)
    (d < dim ? outer : inner) *= d == dim ? 1 : shape[d];
  return {outer, inner};
}

void checkSlab(const std::string &name, const std::vector<int64_t> &shape, size_t dim,
               int64_t first, int64_t count) {
  if (dim >= shape.size() || first < 0 || count < 0 || first + count > shape[dim])
    fail(name, "slab [" + std::to_string(first) + ", " + std::to_string(first + count) +
                   ") of dimension " + std::to_string(dim) + " is outside the array");
}

} // namespace

NpyChunkReader::NpyChunkReader(const std::string &path) : path(path) {
  requireRegularFile(path);
  in.open(path, std::ios::binary);
  if (!in)
    fail(path, std::string("cannot open: ") + std::strerror(errno));
  shape_ = readNpyFloatHeader(in, path);
  dataStart = in.tellg();
}

std::vector<float> NpyChunkReader::read(size_t dim, int64_t first, int64_t count) {
  checkSlab(path, shape_, dim, first, count);
  auto [outer, inner] = outerInner(shape_, dim);
  std::vector<float> slab(size_t(outer * count * inner));
  std::streamsize bytes = std::streamsize(count * inner * int64_t(sizeof(float)));
  for (int64_t o = 0; o < outer; ++o) {
    int64_t element = (o * shape_[dim] + first) * inner;
    in.seekg(dataStart + std::streamoff(element * int64_t(sizeof(float))));
    if (!in.read(reinterpret_cast<char *>(slab.data() + o * count * inner), bytes))
      fail(path, "truncated: the file changed while it was read");
  }
  return slab;
}

NpyChunkWriter::NpyChunkWriter(const std::string &path, std::vector<int64_t> shape)
    : path(path), temp(path + ".tmp." + std::to_string(::getpid())), shape_(std::move(shape)) {
  out.open(temp, std::ios::binary | std::ios::trunc);
  if (!out)
    fail(path, std::string("cannot write: ") + std::strerror(errno));
  std::string header = formatNpyHeader(shape_);
  out.write(header.data(), std::streamsize(header.size()));
  dataStart = std::streamoff(header.size());
}

NpyChunkWriter::~NpyChunkWriter() {
  if (!finished) {
    out.close();
    std::remove(temp.c_str());
  }
}

void NpyChunkWriter::write(size_t dim, int64_t first, int64_t count, const float *data) {
  checkSlab(path, shape_, dim, first, count);
  if (done.empty()) {
    slabDim = dim;
    done.assign(size_t(shape_[dim]), false);
  }
  if (dim != slabDim)
    fail(path, "slabs along dimensions " + std::to_string(slabDim) + " and " +
                   std::to_string(dim) + " of one output");
  for (int64_t i = first; i < first + count; ++i) {
    if (done[size_t(i)])
      fail(path, "index " + std::to_string(i) + " of dimension " + std::to_string(dim) +
                     " written twice");
    done[size_t(i)] = true;
  }
  auto [outer, inner] = outerInner(shape_, dim);
  std::streamsize bytes = std::streamsize(count * inner * int64_t(sizeof(float)));
  for (int64_t o = 0; o < outer; ++o) {
    int64_t element = (o * shape_[dim] + first) * inner;
    out.seekp(dataStart + std::streamoff(element * int64_t(sizeof(float))));
    out.write(reinterpret_cast<const char *>(data + o * count * inner), bytes);
  }
  if (!out)
    fail(path, "cannot write: write failed");
}

void NpyChunkWriter::finish() {
  bool empty = numElements(shape_) == 0;
  for (bool d : done)
    if (!d)
      fail(path, "not every slab of the output was written");
  if (done.empty() && !empty)
    fail(path, "no slab of the output was written");
  out.close();
  if (!out)
    fail(path, "cannot write: write failed");
  if (std::rename(temp.c_str(), path.c_str()) != 0)
    fail(path, std::string("cannot write: ") + std::strerror(errno));
  finished = true;
}

} // namespace snn::runtime
