//===- NpyStreamTest.cpp - .npy slab reads and writes ---------------------===//

#include "TestSupport.h"

#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/Npy.h"
#include "snn/Runtime/Support/NpyStream.h"

#include <gtest/gtest.h>

#include <filesystem>

using namespace snn::runtime;
using snn::test::TempDir;

namespace {

/// 0, 1, 2, ... as float32 in a .npy of `shape`.
std::vector<float> writeIota(const std::string &path, const std::vector<int64_t> &shape) {
  std::vector<float> data(size_t(numElements(shape)));
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = float(i);
  writeNpy(path, shape, data.data());
  return data;
}

/// Elements [first, first + count) of dimension `dim` of the C-order `data` of `shape`.
std::vector<float> slabOf(const std::vector<float> &data, const std::vector<int64_t> &shape,
                          size_t dim, int64_t first, int64_t count) {
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < dim; ++d)
    outer *= shape[d];
  for (size_t d = dim + 1; d < shape.size(); ++d)
    inner *= shape[d];
  std::vector<float> out;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = first; i < first + count; ++i)
      for (int64_t k = 0; k < inner; ++k)
        out.push_back(data[size_t((o * shape[dim] + i) * inner + k)]);
  return out;
}

size_t filesIn(const std::string &dir) {
  size_t n = 0;
  for (const auto &entry : std::filesystem::directory_iterator(dir))
    n += entry.is_regular_file();
  return n;
}

} // namespace

TEST(NpyStream, ReadsSlabsOfEveryDimension) {
  TempDir dir;
  std::vector<int64_t> shape{3, 5, 2, 4};
  std::vector<float> data = writeIota(dir.file("x.npy"), shape);
  NpyChunkReader reader(dir.file("x.npy"));
  EXPECT_EQ(reader.shape(), shape);
  for (size_t dim = 0; dim < shape.size(); ++dim)
    for (int64_t first = 0; first < shape[dim]; ++first)
      for (int64_t count = 1; first + count <= shape[dim]; ++count)
        EXPECT_EQ(reader.read(dim, first, count), slabOf(data, shape, dim, first, count))
            << "dim " << dim << " [" << first << ", " << first + count << ")";
}

TEST(NpyStream, RejectsSlabsOutsideTheArray) {
  TempDir dir;
  writeIota(dir.file("x.npy"), {4, 3});
  NpyChunkReader reader(dir.file("x.npy"));
  EXPECT_THROW(reader.read(0, 3, 2), Error);
  EXPECT_THROW(reader.read(2, 0, 1), Error);
  EXPECT_THROW(reader.read(1, -1, 1), Error);
}

TEST(NpyStream, ReaderChecksTheHeaderAndSizeWhenItOpens) {
  TempDir dir;
  writeIota(dir.file("x.npy"), {4, 3});
  std::string bytes = snn::test::readFile(dir.file("x.npy"));
  snn::test::writeFile(dir.file("short.npy"), bytes.substr(0, bytes.size() - 4));
  EXPECT_THROW(NpyChunkReader(dir.file("short.npy")), Error);
  EXPECT_THROW(NpyChunkReader(dir.file("missing.npy")), Error);
}

TEST(NpyStream, WrittenSlabsInAnyOrderMakeTheWholeArray) {
  TempDir dir;
  std::vector<int64_t> shape{2, 5, 3};
  std::vector<float> data(size_t(numElements(shape)));
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = float(i) * 0.5f - 3.0f;
  {
    NpyChunkWriter writer(dir.file("y.npy"), shape);
    for (auto [first, count] : std::vector<std::pair<int64_t, int64_t>>{{3, 2}, {0, 2}, {2, 1}})
      writer.write(1, first, count, slabOf(data, shape, 1, first, count).data());
    writer.finish();
  }
  NpyArray back = readNpy(dir.file("y.npy"));
  EXPECT_EQ(back.shape, shape);
  EXPECT_EQ(back.data, data);
  EXPECT_EQ(filesIn(dir.path()), 1u) << "a temporary was left behind";
}

TEST(NpyStream, AnIncompleteOutputNeverAppears) {
  TempDir dir;
  std::vector<float> slab(3, 1.0f);
  {
    NpyChunkWriter writer(dir.file("y.npy"), {4, 3});
    writer.write(0, 0, 1, slab.data());
    EXPECT_THROW(writer.write(0, 0, 1, slab.data()), Error) << "index written twice";
    EXPECT_THROW(writer.write(1, 0, 1, slab.data()), Error) << "a second slab dimension";
    EXPECT_THROW(writer.finish(), Error);
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("y.npy")));
  EXPECT_EQ(filesIn(dir.path()), 0u) << "the temporary survived a failed write";
}
