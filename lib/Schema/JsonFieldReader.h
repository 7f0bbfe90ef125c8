//===- JsonFieldReader.h - Typed fields of a schema JSON object -*- C++ -*-===//
//
// Private to SNNSchema: the manifest and the device profile read their JSON
// with it, so both report a bad field the same way.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_LIB_SCHEMA_JSONFIELDREADER_H
#define SNN_LIB_SCHEMA_JSONFIELDREADER_H

#include "snn/Schema/Enums.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace snn::schema {

/// Reads typed fields of one JSON object; errors (thrown as `Error`) name the
/// file and the field path ("programs[0].file").
template <typename Error> class JsonFieldReader {
public:
  JsonFieldReader(const nlohmann::json &object, std::string path, const std::string &file)
      : object(object), path(std::move(path)), file(file) {
    if (!object.is_object())
      fail(this->path.empty() ? "top level must be a JSON object"
                              : "'" + this->path + "' must be an object");
  }

  const nlohmann::json *find(const char *name) const {
    auto it = object.find(name);
    return it == object.end() ? nullptr : &*it;
  }
  const nlohmann::json &get(const char *name) const {
    const nlohmann::json *value = find(name);
    if (!value)
      fail("missing '" + field(name) + "'");
    return *value;
  }
  std::string getString(const char *name) const {
    const nlohmann::json &value = get(name);
    if (!value.is_string())
      fail("'" + field(name) + "' must be a string");
    return value.get<std::string>();
  }
  std::string getString(const char *name, const std::string &fallback) const {
    return find(name) ? getString(name) : fallback;
  }
  int64_t getInt(const char *name) const {
    const nlohmann::json &value = get(name);
    if (!value.is_number_integer())
      fail("'" + field(name) + "' must be an integer");
    return value.get<int64_t>();
  }
  int64_t getInt(const char *name, int64_t fallback) const {
    return find(name) ? getInt(name) : fallback;
  }
  double getDouble(const char *name) const {
    const nlohmann::json &value = get(name);
    if (!value.is_number())
      fail("'" + field(name) + "' must be a number");
    return value.get<double>();
  }
  bool getBool(const char *name) const {
    const nlohmann::json &value = get(name);
    if (!value.is_boolean())
      fail("'" + field(name) + "' must be true or false");
    return value.get<bool>();
  }
  bool getBool(const char *name, bool fallback) const {
    return find(name) ? getBool(name) : fallback;
  }
  std::vector<int64_t> getInts(const char *name, int64_t min) const {
    const nlohmann::json &value = get(name);
    std::vector<int64_t> result;
    if (value.is_array())
      for (const nlohmann::json &item : value)
        if (item.is_number_integer() && item.get<int64_t>() >= min)
          result.push_back(item.get<int64_t>());
    if (!value.is_array() || result.size() != value.size())
      fail("'" + field(name) + "' must be an array of integers >= " + std::to_string(min));
    return result;
  }
  std::vector<double> getNonNegativeDoubles(const char *name) const {
    const nlohmann::json &value = get(name);
    std::vector<double> result;
    if (value.is_array())
      for (const nlohmann::json &item : value)
        if (item.is_number() && item.get<double>() >= 0)
          result.push_back(item.get<double>());
    if (!value.is_array() || result.size() != value.size())
      fail("'" + field(name) + "' must be an array of numbers >= 0");
    return result;
  }
  std::vector<std::string> getStrings(const char *name) const {
    const nlohmann::json &value = get(name);
    std::vector<std::string> result;
    if (value.is_array())
      for (const nlohmann::json &item : value)
        if (item.is_string())
          result.push_back(item.get<std::string>());
    if (!value.is_array() || result.size() != value.size())
      fail("'" + field(name) + "' must be an array of strings");
    return result;
  }
  const nlohmann::json &getArray(const char *name) const {
    const nlohmann::json &value = get(name);
    if (!value.is_array())
      fail("'" + field(name) + "' must be an array");
    return value;
  }
  template <typename E> E getEnum(const char *name) const {
    std::string text = getString(name);
    std::optional<E> value = parseEnum<E>(text);
    if (!value)
      fail("'" + field(name) + "': " + unknownSpellingMessage<E>(text));
    return *value;
  }
  std::string field(const std::string &name) const {
    return path.empty() ? name : path + "." + name;
  }
  const std::string &fileName() const { return file; }
  [[noreturn]] void fail(const std::string &message) const {
    throw Error(file + ": " + message);
  }

private:
  const nlohmann::json &object;
  std::string path;
  const std::string &file;
};

} // namespace snn::schema

#endif // SNN_LIB_SCHEMA_JSONFIELDREADER_H
