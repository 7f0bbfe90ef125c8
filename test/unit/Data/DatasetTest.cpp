//===- DatasetTest.cpp - IDX gzip, Fashion-MNIST and .npy datasets --------===//

#include "TestSupport.h"

#include "snn/Runtime/Data/DataSource.h"
#include "snn/Runtime/Data/Dataset.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/Gzip.h"
#include "snn/Runtime/Data/Idx.h"
#include "snn/Runtime/Support/Npy.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>

using namespace snn::runtime;
using snn::test::errorOf;
using snn::test::TempDir;

namespace {

std::string gzipBytes(const std::string &bytes) {
  uLongf size = compressBound(uLong(bytes.size())) + 32;
  std::string out(size, '\0');
  z_stream stream{};
  // windowBits 15 + 16: a gzip wrapper, as the dataset files have.
  deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
               Z_DEFAULT_STRATEGY);
  stream.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(bytes.data()));
  stream.avail_in = uInt(bytes.size());
  stream.next_out = reinterpret_cast<Bytef *>(out.data());
  stream.avail_out = uInt(out.size());
  deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

/// An IDX file of unsigned bytes with dims `dims` and data 0, 1, 2, ...
std::string idxBytes(std::vector<uint32_t> dims, int start = 0) {
  std::string bytes{0, 0, 0x08, char(dims.size())};
  size_t count = 1;
  for (uint32_t dim : dims) {
    for (int shift = 24; shift >= 0; shift -= 8)
      bytes.push_back(char((dim >> shift) & 0xff));
    count *= dim;
  }
  for (size_t i = 0; i < count; ++i)
    bytes.push_back(char((start + i) % 251));
  return bytes;
}

std::string npyBytes(const std::string &descr, std::vector<int64_t> shape,
                     const std::string &data) {
  std::string dict = "{'descr': '" + descr +
                     "', 'fortran_order': False, "
                     "'shape': (";
  for (int64_t dim : shape)
    dict += std::to_string(dim) + ",";
  dict += "), }\n";
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes.push_back(char(dict.size() & 0xff));
  bytes.push_back(char(dict.size() >> 8));
  return bytes + dict + data;
}

template <typename T> std::string raw(std::vector<T> values) {
  return std::string(reinterpret_cast<const char *>(values.data()),
                     values.size() * sizeof(T));
}

void writeFashionSplit(const TempDir &dir, const std::string &split,
                       uint32_t count) {
  snn::test::writeFile(dir.file(split + "-images-idx3-ubyte.gz"),
                       gzipBytes(idxBytes({count, 28, 28})));
  snn::test::writeFile(dir.file(split + "-labels-idx1-ubyte.gz"),
                       gzipBytes(idxBytes({count}, 3)));
}

} // namespace

TEST(Idx, ReadsGzipCompressedFiles) {
  TempDir dir;
  snn::test::writeFile(dir.file("a.gz"), gzipBytes(idxBytes({2, 3, 4})));
  IdxArray array = readIdxFile(dir.file("a.gz"));
  EXPECT_EQ(array.shape, (std::vector<int64_t>{2, 3, 4}));
  ASSERT_EQ(array.data.size(), 24u);
  EXPECT_EQ(array.data[23], char(23));
}

TEST(Idx, RefusesMalformedFiles) {
  std::string good = idxBytes({2, 3});
  EXPECT_NE(errorOf([&] {
              parseIdx("\x01\x00\x08\x01", "x");
            }).find("not an IDX file"),
            std::string::npos);
  std::string floats = good;
  floats[2] = 0x0d;
  EXPECT_NE(errorOf([&] { parseIdx(floats, "x"); }).find("type 0x0d"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              parseIdx(good.substr(0, good.size() - 1), "x");
            }).find("truncated"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              parseIdx(good.substr(0, 7), "x");
            }).find("truncated IDX header"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { parseIdx(good + "x", "x"); }).find("7 bytes"),
            std::string::npos);
}

TEST(Gzip, RefusesCorruptAndTruncatedStreams) {
  TempDir dir;
  std::string compressed = gzipBytes(idxBytes({64, 64}));
  snn::test::writeFile(dir.file("cut.gz"),
                       compressed.substr(0, compressed.size() / 2));
  EXPECT_NE(errorOf([&] { readGzipFile(dir.file("cut.gz")); }).find("cut.gz"),
            std::string::npos);
  std::string flipped = compressed;
  flipped[flipped.size() - 6] ^= 0x5a; // inside the CRC-32 trailer
  snn::test::writeFile(dir.file("crc.gz"), flipped);
  EXPECT_NE(errorOf([&] { readGzipFile(dir.file("crc.gz")); }).find("crc.gz"),
            std::string::npos);
  EXPECT_NE(
      errorOf([&] { readGzipFile(dir.file("none.gz")); }).find("cannot open"),
      std::string::npos);
}

TEST(FashionMnist, PixelsAreBytesOver255) {
  TempDir dir;
  writeFashionSplit(dir, "train", 5);
  Dataset data = loadFashionMnist(dir.path(), "train");
  EXPECT_EQ(data.name, "fashion-mnist:train");
  ASSERT_EQ(data.samples.sizes(), (std::vector<int64_t>{5, 1, 28, 28}));
  const float *pixels = data.samples.data_ptr<float>();
  EXPECT_EQ(pixels[0], 0.0f);
  EXPECT_EQ(pixels[200], float(200) / 255.0f);
  EXPECT_EQ(pixels[300], float(300 % 251) / 255.0f);
  EXPECT_EQ(data.labels.scalar_type(), at::kLong);
  EXPECT_EQ(data.labels[4].item<int64_t>(), 7);
}

TEST(FashionMnist, SplitsAndErrors) {
  TempDir dir;
  writeFashionSplit(dir, "train", 6);
  writeFashionSplit(dir, "t10k", 2);
  DataSplits splits = loadTrainingData({"fashion-mnist:" + dir.path(), "", ""});
  EXPECT_EQ(splits.train.size(), 6);
  ASSERT_TRUE(splits.eval.has_value());
  EXPECT_EQ(splits.eval->size(), 2);
  EXPECT_EQ(loadEvaluationData({"fashion-mnist:" + dir.path(), "", ""}).size(),
            2);

  snn::test::writeFile(dir.file("t10k-labels-idx1-ubyte.gz"),
                       gzipBytes(idxBytes({3})));
  EXPECT_NE(errorOf([&] {
              loadFashionMnist(dir.path(), "t10k");
            }).find("2 t10k images but 3 labels"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              loadFashionMnist(dir.file("nope"), "train");
            }).find("does not exist"),
            std::string::npos);
}

TEST(NpyDataset, ReadsFloatSamplesAndIntegerLabels) {
  TempDir dir;
  snn::test::writeFile(dir.file("x.npy"),
                       npyBytes("<f4", {3, 2}, raw<float>({1, 2, 3, 4, 5, 6})));
  snn::test::writeFile(dir.file("y32.npy"),
                       npyBytes("<i4", {3}, raw<int32_t>({2, 0, 1})));
  snn::test::writeFile(dir.file("y64.npy"),
                       npyBytes("<i8", {3}, raw<int64_t>({1, 1, 0})));
  Dataset a = loadNpyDataset(dir.file("x.npy"), dir.file("y32.npy"));
  EXPECT_EQ(a.samples.sizes(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(a.labels.scalar_type(), at::kLong);
  EXPECT_EQ(a.labels[0].item<int64_t>(), 2);
  Dataset b = loadNpyDataset(dir.file("x.npy"), dir.file("y64.npy"));
  EXPECT_EQ(b.labels[1].item<int64_t>(), 1);
  EXPECT_NO_THROW(checkLabels(a, 3));
  // The labels file is the culprit, not the samples'.
  EXPECT_NE(errorOf([&] { checkLabels(a, 2); }).find("y32.npy: label 2 of sample 0"),
            std::string::npos);
}

TEST(NpyDataset, RefusesBadFiles) {
  TempDir dir;
  snn::test::writeFile(dir.file("x.npy"),
                       npyBytes("<f4", {3, 2}, raw<float>({1, 2, 3, 4, 5, 6})));
  snn::test::writeFile(dir.file("y2.npy"),
                       npyBytes("<i8", {2}, raw<int64_t>({1, 0})));
  snn::test::writeFile(dir.file("yf.npy"),
                       npyBytes("<f4", {3}, raw<float>({1, 0, 1})));
  snn::test::writeFile(dir.file("y2d.npy"),
                       npyBytes("<i8", {3, 1}, raw<int64_t>({1, 0, 1})));
  snn::test::writeFile(dir.file("x64.npy"),
                       npyBytes("<f8", {3}, raw<double>({1, 0, 1})));
  snn::test::writeFile(dir.file("ycut.npy"),
                       npyBytes("<i8", {3}, raw<int64_t>({1, 0})));
  auto load = [&](const char *x, const char *y) {
    return errorOf([&] { loadNpyDataset(dir.file(x), dir.file(y)); });
  };
  EXPECT_NE(load("x.npy", "y2.npy").find("X holds 3 samples but Y 2 labels"),
            std::string::npos);
  EXPECT_NE(load("x.npy", "yf.npy").find("dtype '<f4' is not supported"),
            std::string::npos);
  EXPECT_NE(load("x.npy", "y2d.npy").find("1-D array [S]"), std::string::npos);
  EXPECT_NE(load("x64.npy", "y2.npy").find("'<f8'"), std::string::npos);
  EXPECT_NE(load("x.npy", "ycut.npy").find("truncated"), std::string::npos);
  EXPECT_NE(load("missing.npy", "y2.npy").find("missing.npy: cannot open"),
            std::string::npos);
}

TEST(DataSource, FlagErrors) {
  EXPECT_NE(errorOf([] { loadTrainingData({}); }).find("no data"),
            std::string::npos);
  EXPECT_NE(errorOf([] {
              loadTrainingData({"fashion-mnist", "x,y", ""});
            }).find("exclude each other"),
            std::string::npos);
  EXPECT_NE(errorOf([] {
              loadTrainingData({"", "x.npy", ""});
            }).find("--data-npy takes X.npy,Y.npy"),
            std::string::npos);
  EXPECT_NE(errorOf([] {
              loadTrainingData({"cifar10", "", ""});
            }).find("unknown dataset 'cifar10'"),
            std::string::npos);
  EXPECT_NE(errorOf([] {
              loadTrainingData({"fashion-mnist", "", "x,y"});
            }).find("--eval-data-npy goes with --data-npy"),
            std::string::npos);
}
