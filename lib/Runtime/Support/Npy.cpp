//===- Npy.cpp - NumPy .npy reader and writer -----------------------------===//
//
// Format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
// magic "\x93NUMPY", major, minor, header length (2 bytes in v1, 4 in v2/v3),
// a Python dict literal padded with spaces and '\n', then the raw data.
//
//===----------------------------------------------------------------------===//

#include "snn/Runtime/Support/Npy.h"
#include "snn/Runtime/Support/Error.h"
#include "snn/Runtime/Support/DurableFile.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <unistd.h>

namespace snn::runtime {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

[[noreturn]] void fail(const std::string &name, const std::string &message) {
  throw Error(name + ": " + message);
}

/// The three keys of the header dict that matter.
struct NpyHeader {
  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
  bool hasDescr = false, hasOrder = false, hasShape = false;
};

/// A tiny parser for the header's Python dict literal, e.g.
/// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
public:
  HeaderParser(const std::string &text, const std::string &name)
      : text(text), name(name) {}

  NpyHeader parse() {
    NpyHeader header;
    expect('{');
    while (!consume('}')) {
      std::string key = parseString();
      expect(':');
      parseValue(key, header);
      if (!consume(',')) {
        expect('}');
        break;
      }
    }
    if (!header.hasDescr || !header.hasOrder || !header.hasShape)
      bad("header lacks 'descr', 'fortran_order' or 'shape'");
    return header;
  }

private:
  void parseValue(const std::string &key, NpyHeader &header) {
    if (key == "descr") {
      header.descr = parseString();
      header.hasDescr = true;
    } else if (key == "fortran_order") {
      header.fortranOrder = parseBool();
      header.hasOrder = true;
    } else if (key == "shape") {
      header.shape = parseTuple();
      header.hasShape = true;
    } else {
      bad("unexpected header key '" + key + "'");
    }
  }

  void skipSpace() {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos])))
      ++pos;
  }
  bool consume(char c) {
    skipSpace();
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!consume(c))
      bad(std::string("expected '") + c + "'");
  }
  std::string parseString() {
    skipSpace();
    if (pos >= text.size() || (text[pos] != '\'' && text[pos] != '"'))
      bad("expected a quoted string");
    char quote = text[pos++];
    size_t end = text.find(quote, pos);
    if (end == std::string::npos)
      bad("unterminated string");
    std::string value = text.substr(pos, end - pos);
    pos = end + 1;
    return value;
  }
  bool parseBool() {
    skipSpace();
    if (text.compare(pos, 4, "True") == 0) {
      pos += 4;
      return true;
    }
    if (text.compare(pos, 5, "False") == 0) {
      pos += 5;
      return false;
    }
    bad("expected True or False");
  }
  std::vector<int64_t> parseTuple() {
    std::vector<int64_t> dims;
    expect('(');
    while (!consume(')')) {
      dims.push_back(parseDim());
      if (!consume(',')) {
        expect(')');
        break;
      }
    }
    return dims;
  }
  int64_t parseDim() {
    skipSpace();
    size_t start = pos;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])))
      ++pos;
    // Python 2 era files may write longs as "3L".
    std::string digits = text.substr(start, pos - start);
    if (pos < text.size() && text[pos] == 'L')
      ++pos;
    if (digits.empty() || digits.size() > 18)
      bad("bad dimension in 'shape'");
    return std::stoll(digits);
  }
  [[noreturn]] void bad(const std::string &what) {
    fail(name, "malformed .npy header: " + what);
  }

  const std::string &text;
  const std::string &name;
  size_t pos = 0;
};

uint32_t readLittleEndian(const unsigned char *bytes, int count) {
  uint32_t value = 0;
  for (int i = count - 1; i >= 0; --i)
    value = (value << 8) | bytes[i];
  return value;
}

std::string readHeaderText(std::istream &in, const std::string &name) {
  unsigned char prefix[kMagicSize + 2];
  if (!in.read(reinterpret_cast<char *>(prefix), sizeof(prefix)) ||
      std::memcmp(prefix, kMagic, kMagicSize) != 0)
    fail(name, "not a .npy file (bad magic)");
  int major = prefix[kMagicSize];
  if (major < 1 || major > 3)
    fail(name, "unsupported .npy format version " + std::to_string(major) +
                   "." + std::to_string(prefix[kMagicSize + 1]));
  int lengthBytes = major == 1 ? 2 : 4;
  unsigned char lengthField[4];
  if (!in.read(reinterpret_cast<char *>(lengthField), lengthBytes))
    fail(name, "truncated .npy header");
  uint32_t length = readLittleEndian(lengthField, lengthBytes);
  if (length > (1u << 24))
    fail(name, "malformed .npy header: length " + std::to_string(length));
  std::string text(length, '\0');
  if (!in.read(text.data(), length))
    fail(name, "truncated .npy header");
  return text;
}

void checkDtype(const NpyHeader &header, const std::string &name) {
  if (header.descr == "<f4")
    return;
  if (header.descr == ">f4")
    fail(name, "big-endian float32 is not supported; save it as little-endian "
               "'<f4' (x.astype('<f4'))");
  fail(name, "dtype '" + header.descr +
                 "' is not supported; expected float32 ('<f4'): convert with "
                 "x.astype(numpy.float32)");
}

/// Bytes left in a seekable stream, or -1 if it cannot tell.
int64_t remainingBytes(std::istream &in) {
  std::streampos here = in.tellg();
  if (here == std::streampos(-1))
    return -1;
  in.seekg(0, std::ios::end);
  std::streampos end = in.tellg();
  in.seekg(here);
  return end == std::streampos(-1) ? -1 : int64_t(end - here);
}

/// Checks the data size of `header` with `itemSize`-byte elements against the
/// bytes left in `in` (guarding the element count against overflow before
/// anything is allocated) and returns the element count.
int64_t checkedCount(std::istream &in, const NpyHeader &header,
                     int64_t itemSize, const std::string &name) {
  if (header.fortranOrder)
    fail(name, "Fortran-order arrays are not supported; save "
               "numpy.ascontiguousarray(x)");
  int64_t count = 1;
  for (int64_t dim : header.shape) {
    if (dim != 0 && count > std::numeric_limits<int64_t>::max() / 8 / dim)
      fail(name, "shape is too large");
    count *= dim;
  }
  int64_t wanted = count * itemSize;
  int64_t available = remainingBytes(in);
  if (available >= 0 && available < wanted)
    fail(name, "truncated: data has " + std::to_string(available) +
                   " bytes, shape needs " + std::to_string(wanted));
  if (available > wanted)
    fail(name, std::to_string(available - wanted) +
                   " unexpected bytes after the data");
  return count;
}

/// The byte width of a fixed-size numeric dtype such as '<i8' or '|u1'; 0 for
/// anything else (objects, strings, structured dtypes).
int64_t itemSizeOf(const std::string &descr) {
  if (descr.size() < 3 ||
      std::string("<>|=").find(descr[0]) == std::string::npos ||
      std::string("iufb").find(descr[1]) == std::string::npos)
    return 0;
  for (size_t i = 2; i < descr.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(descr[i])))
      return 0;
  int64_t size = std::stoll(descr.substr(2, 3));
  return size == 1 || size == 2 || size == 4 || size == 8 ? size : 0;
}

} // namespace

int64_t numElements(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

std::vector<int64_t> readNpyFloatHeader(std::istream &in, const std::string &name) {
  NpyHeader header = HeaderParser(readHeaderText(in, name), name).parse();
  checkDtype(header, name);
  checkedCount(in, header, int64_t(sizeof(float)), name);
  return header.shape;
}

NpyArray parseNpy(std::istream &in, const std::string &name) {
  NpyArray array;
  array.shape = readNpyFloatHeader(in, name);
  int64_t count = numElements(array.shape);
  array.data.resize(size_t(count));
  if (!in.read(reinterpret_cast<char *>(array.data.data()),
               std::streamsize(count * int64_t(sizeof(float)))))
    fail(name, "truncated: data is shorter than the shape needs");
  return array;
}

NpyRawArray readNpyRaw(const std::string &path) {
  requireRegularFile(path);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(path, std::string("cannot open: ") + std::strerror(errno));
  NpyHeader header = HeaderParser(readHeaderText(in, path), path).parse();
  NpyRawArray array;
  array.descr = header.descr;
  array.itemSize = itemSizeOf(header.descr);
  if (array.itemSize == 0)
    fail(path, "dtype '" + header.descr + "' is not a numeric dtype");
  int64_t count = checkedCount(in, header, array.itemSize, path);
  array.shape = header.shape;
  array.bytes.resize(size_t(count * array.itemSize));
  if (!in.read(array.bytes.data(), std::streamsize(array.bytes.size())))
    fail(path, "truncated: data is shorter than the shape needs");
  return array;
}

NpyArray readNpy(const std::string &path) {
  requireRegularFile(path);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(path, std::string("cannot open: ") + std::strerror(errno));
  return parseNpy(in, path);
}

std::string formatNpyHeader(const std::vector<int64_t> &shape) {
  std::ostringstream dict;
  dict << "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i)
    dict << shape[i] << (shape.size() == 1 || i + 1 < shape.size() ? "," : "")
         << (i + 1 < shape.size() ? " " : "");
  dict << "), }";
  std::string header = dict.str();

  // NumPy pads so that the data starts on a 64-byte boundary.
  bool wide = header.size() + 1 + 10 > 65535;
  size_t prefix = wide ? 12 : 10;
  size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header.push_back('\n');

  std::string bytes(kMagic, kMagicSize);
  bytes.push_back(char(wide ? 2 : 1));
  bytes.push_back(char(0));
  uint32_t length = uint32_t(header.size());
  for (size_t i = 0; i < (wide ? 4u : 2u); ++i)
    bytes.push_back(char((length >> (8 * i)) & 0xff));
  bytes += header;
  return bytes;
}

std::string formatNpy(const std::vector<int64_t> &shape, const float *data) {
  std::string bytes = formatNpyHeader(shape);
  bytes.append(reinterpret_cast<const char *>(data),
               size_t(numElements(shape)) * sizeof(float));
  return bytes;
}

void writeFileAtomically(const std::string &path, const std::string &bytes) {
  // The temporary sits beside the target so that rename() stays on one file
  // system and is atomic.
  std::string temp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out)
      fail(path, std::string("cannot write: ") + std::strerror(errno));
    out.write(bytes.data(), std::streamsize(bytes.size()));
    out.close();
    if (!out) {
      std::remove(temp.c_str());
      fail(path, "cannot write: write failed");
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    int code = errno;
    std::remove(temp.c_str());
    fail(path, std::string("cannot write: ") + std::strerror(code));
  }
}

void writeNpy(const std::string &path, const std::vector<int64_t> &shape,
              const float *data) {
  writeFileAtomically(path, formatNpy(shape, data));
}

} // namespace snn::runtime
