//===- EventFileTest.cpp - CRC-32C, TFRecord framing, Event bytes ---------===//
//
// Known answers computed outside this code: the CRC-32C check value and the
// iSCSI vectors of RFC 3720 (B.4), and records and events serialized by an
// independent bitwise CRC and Python's struct module.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include "snn/Runtime/Observability/Crc32c.h"
#include "snn/Runtime/Observability/EventFileWriter.h"
#include "snn/Runtime/Observability/ProtoWriter.h"
#include "snn/Runtime/Observability/TensorBoardEvent.h"
#include "snn/Runtime/Observability/TfRecord.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <regex>

using namespace snn::runtime;
using snn::test::TempDir;

namespace {

std::string fromHex(const std::string &hex) {
  std::string bytes;
  for (size_t i = 0; i < hex.size(); i += 2)
    bytes.push_back(char(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return bytes;
}

uint64_t littleEndian(const std::string &bytes, size_t at, int size) {
  uint64_t value = 0;
  for (int i = size - 1; i >= 0; --i)
    value = value << 8 | uint8_t(bytes[at + i]);
  return value;
}

TEST(Crc32cTest, KnownVectors) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(""), 0u);
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::string ascending;
  for (int i = 0; i < 32; ++i)
    ascending.push_back(char(i));
  EXPECT_EQ(crc32c(ascending), 0x46DD794Eu);
  EXPECT_EQ(maskCrc32c(crc32c("123456789")), 0xC78AB0E5u);
}

TEST(Crc32cTest, ContinuesAcrossPieces) {
  uint32_t first = crc32c("1234", 4);
  EXPECT_EQ(crc32c("56789", 5, first), 0xE3069283u);
}

TEST(TfRecordTest, FramesPayloadWithMaskedCrcs) {
  EXPECT_EQ(tfRecord("abc"), fromHex("0300000000000000b099490e6162636e57f121"));
  std::string empty = tfRecord("");
  ASSERT_EQ(empty.size(), 16u);
  EXPECT_EQ(littleEndian(empty, 8, 4), maskCrc32c(crc32c(empty.substr(0, 8))));
  EXPECT_EQ(littleEndian(empty, 12, 4), maskCrc32c(0));
}

TEST(ProtoWriterTest, Varints) {
  EXPECT_EQ(ProtoWriter::varint(0), std::string(1, '\0'));
  EXPECT_EQ(ProtoWriter::varint(300), fromHex("ac02"));
  // A negative int64 is its two's complement: ten bytes.
  EXPECT_EQ(ProtoWriter::varint(uint64_t(int64_t(-1))), fromHex("ffffffffffffffffff01"));
}

TEST(TensorBoardEventTest, FileVersionEvent) {
  EXPECT_EQ(fileVersionEvent(1.5),
            fromHex("09000000000000f83f1a0d627261696e2e4576656e743a32"));
}

TEST(TensorBoardEventTest, ScalarsEvent) {
  EXPECT_EQ(scalarsEvent(2.0, 7, {{"loss", 0.25}}),
            fromHex("09000000000000004010072a0d0a0b0a046c6f7373150000803e"));
}

TEST(EventFileWriterTest, NamesFileAsTensorBoardDoes) {
  EXPECT_EQ(eventFileName(1733360000, "node1", 42),
            "events.out.tfevents.1733360000.node1.42.0.spikemesh");
  EXPECT_EQ(eventFileName(5, "h", 1), "events.out.tfevents.0000000005.h.1.0.spikemesh");
}

TEST(EventFileWriterTest, WritesFramedRecordsToNewFile) {
  TempDir tmp;
  std::string dir = tmp.file("runs/a"); // created with its parents
  EventFileWriter writer(dir);
  writer.write(3, {{"train/loss", 0.5}, {"train/accuracy", 0.125}});
  std::string name = std::filesystem::path(writer.path()).filename().string();
  EXPECT_TRUE(std::regex_match(name, std::regex(R"(events\.out\.tfevents\.\d{10}\..+\.\d+\.0\.spikemesh)")))
      << name;
  // Read while the writer is open: every record is flushed as written.
  std::string bytes = snn::test::readFile(writer.path());
  size_t at = 0;
  std::vector<std::string> payloads;
  while (at < bytes.size()) {
    ASSERT_LE(at + 12, bytes.size());
    uint64_t length = littleEndian(bytes, at, 8);
    EXPECT_EQ(littleEndian(bytes, at + 8, 4), maskCrc32c(crc32c(bytes.substr(at, 8))));
    std::string payload = bytes.substr(at + 12, length);
    EXPECT_EQ(littleEndian(bytes, at + 12 + length, 4), maskCrc32c(crc32c(payload)));
    payloads.push_back(payload);
    at += 16 + length;
  }
  ASSERT_EQ(payloads.size(), 2u);
  EXPECT_NE(payloads[0].find("brain.Event:2"), std::string::npos);
  // The second: wall_time (9 bytes), then step 3, then the summary.
  EXPECT_EQ(payloads[1].substr(9, 2), fromHex("1003"));
  EXPECT_NE(payloads[1].find("train/accuracy"), std::string::npos);
}

TEST(EventFileWriterTest, UncreatableDirectoryNamesFlag) {
  TempDir tmp;
  std::string file = tmp.file("plain");
  snn::test::writeFile(file, "x");
  std::string message = snn::test::errorOf([&] { EventFileWriter writer(file + "/sub"); });
  EXPECT_NE(message.find("--tensorboard " + file + "/sub: cannot create"), std::string::npos)
      << message;
}

} // namespace
