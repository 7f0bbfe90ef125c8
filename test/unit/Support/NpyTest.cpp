//===- NpyTest.cpp - .npy round trips and malformed files -----------------===//

#include "TestSupport.h"

#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/Npy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

using namespace snn::runtime;
using snn::test::TempDir;

namespace {

/// A hand-made .npy file: `dict` is the header dict, `data` follows it.
std::string makeNpy(const std::string &dict, const std::string &data,
                    int major = 1) {
  std::string header = dict + "\n";
  std::string bytes("\x93NUMPY", 6);
  bytes.push_back(char(major));
  bytes.push_back(0);
  uint32_t length = uint32_t(header.size());
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i)
    bytes.push_back(char((length >> (8 * i)) & 0xff));
  return bytes + header + data;
}

std::string floatBytes(std::vector<float> values) {
  return std::string(reinterpret_cast<const char *>(values.data()),
                     values.size() * sizeof(float));
}

/// The message parseNpy throws for `bytes`, or "" if it does not throw.
std::string parseError(const std::string &bytes) {
  TempDir dir;
  snn::test::writeFile(dir.file("a.npy"), bytes);
  try {
    readNpy(dir.file("a.npy"));
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(Npy, RoundTripsShapes) {
  TempDir dir;
  for (std::vector<int64_t> shape : std::vector<std::vector<int64_t>>{
           {2, 3}, {5}, {}, {0, 3}, {4, 2, 1, 3, 3}}) {
    std::vector<float> data(size_t(numElements(shape)));
    for (size_t i = 0; i < data.size(); ++i)
      data[i] = float(i) * 0.25f - 1.0f;
    writeNpy(dir.file("x.npy"), shape, data.data());
    NpyArray back = readNpy(dir.file("x.npy"));
    EXPECT_EQ(back.shape, shape);
    EXPECT_EQ(back.data, data);
  }
}

TEST(Npy, WritesNumpyHeaderLayout) {
  // Six values: the (2, 3) call below reads all of them (ASan found a read past five).
  std::vector<float> data{1, 2, 3, 4, 5, 6};
  std::string bytes = formatNpy({5}, data.data());
  ASSERT_EQ((bytes.size() - 20) % 64, 0u);
  EXPECT_NE(bytes.find("{'descr': '<f4', 'fortran_order': False, "
                       "'shape': (5,), }"),
            std::string::npos);
  EXPECT_EQ(bytes[(bytes.size() - 20) - 1], '\n');
  EXPECT_NE(formatNpy({2, 3}, data.data()).find("(2, 3)"), std::string::npos);
  EXPECT_NE(formatNpy({}, data.data()).find("'shape': ()"), std::string::npos);
}

TEST(Npy, ReadsVersion2AndSpacing) {
  std::string bytes = makeNpy("{\"descr\":\"<f4\",\"fortran_order\":False,"
                              "\"shape\":(2,)}",
                              floatBytes({1.5f, -2.0f}), 2);
  TempDir dir;
  snn::test::writeFile(dir.file("v2.npy"), bytes);
  NpyArray array = readNpy(dir.file("v2.npy"));
  EXPECT_EQ(array.shape, std::vector<int64_t>{2});
  EXPECT_EQ(array.data, (std::vector<float>{1.5f, -2.0f}));
}

TEST(Npy, RejectsOtherDtypes) {
  std::string f8 = makeNpy(
      "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }",
      std::string(8, '\0'));
  EXPECT_NE(parseError(f8).find("dtype '<f8' is not supported"),
            std::string::npos);
  std::string i4 = makeNpy(
      "{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }",
      std::string(4, '\0'));
  EXPECT_NE(parseError(i4).find("'<i4'"), std::string::npos);
  std::string big = makeNpy(
      "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }",
      std::string(4, '\0'));
  EXPECT_NE(parseError(big).find("big-endian"), std::string::npos);
}

TEST(Npy, RejectsFortranOrder) {
  std::string bytes = makeNpy(
      "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
      floatBytes({1, 2, 3, 4}));
  EXPECT_NE(parseError(bytes).find("Fortran"), std::string::npos);
}

TEST(Npy, RejectsTruncationAndGarbage) {
  std::string good = formatNpy({3, 4}, std::vector<float>(12, 1.0f).data());
  EXPECT_EQ(parseError(good), "");
  std::string lastError;
  // Every strict prefix of a valid file is an error, never a crash.
  for (size_t length = 0; length < good.size(); ++length) {
    std::string message = parseError(good.substr(0, length));
    ASSERT_NE(message, "") << "prefix of " << length << " bytes was accepted";
    lastError = message;
  }
  EXPECT_NE(lastError.find("truncated"), std::string::npos);
  EXPECT_NE(parseError(good + "xx").find("unexpected bytes"),
            std::string::npos);
  EXPECT_NE(parseError("hello, world").find("not a .npy file"),
            std::string::npos);
  EXPECT_NE(parseError(makeNpy("{'descr': '<f4', 'shape': (1,)}",
                               floatBytes({1})))
                .find("malformed .npy header"),
            std::string::npos);
  EXPECT_NE(parseError(makeNpy("{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (99999999999, 99999999999)}",
                               ""))
                .find("too large"),
            std::string::npos);
}

TEST(Npy, MissingFileNamesThePath) {
  try {
    readNpy("/nonexistent/dir/x.npy");
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_EQ(std::string(e.what()).rfind("/nonexistent/dir/x.npy: cannot open", 0),
              0u);
  }
}

TEST(Npy, FailedWriteLeavesNoFile) {
  TempDir dir;
  float value = 1.0f;
  std::string target = dir.file("missing/sub/y.npy");
  EXPECT_THROW(writeNpy(target, {1}, &value), Error);
  EXPECT_FALSE(std::filesystem::exists(target));
  // A successful write replaces the file and leaves no temporary behind.
  writeNpy(dir.file("y.npy"), {1}, &value);
  writeNpy(dir.file("y.npy"), {1}, &value);
  size_t files = 0;
  for (const auto &entry : std::filesystem::directory_iterator(dir.path()))
    files += entry.is_regular_file();
  EXPECT_EQ(files, 1u);
}
