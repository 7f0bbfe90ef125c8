//===- EnumNames.h - The spelling of an enum on the command line -*- C++ -*-===//
//
// One table per enum (the optimizer, the LR schedule, the loss, the progress
// mode) holds the name of each value. snn-run's parser turns a flag's text
// into the value with it, and whatever has to write the value back as text
// (the settings a resumed run compares, the checkpoint's optimizer kind, the
// help's defaults) formats it with the same table, so the two cannot drift.
// These enums are snn-run's own; the ones the compiler writes into an artifact
// are spelled by the schema (snn/Schema/Enums.h), whose list format this shares.
//
//===----------------------------------------------------------------------===//
#ifndef SNN_RUNTIME_SUPPORT_ENUMNAMES_H
#define SNN_RUNTIME_SUPPORT_ENUMNAMES_H

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace snn::runtime {

/// Throws Error("FLAG: unknown NOUN 'NAME' (expected a, b or c)").
[[noreturn]] void throwUnknownName(std::string_view flag, std::string_view noun,
                                   const std::string &name,
                                   const std::vector<std::string_view> &names);

template <typename Enum, std::size_t N> struct EnumNames {
  /// The flag that takes the names ("--optimizer") and what a name stands for
  /// ("optimizer"), for the error of an unknown name.
  const char *flag;
  const char *noun;
  /// Every value with its name, in the order the help and errors list them.
  std::array<std::pair<Enum, const char *>, N> entries;

  /// The value called `name` (exact spelling), if there is one.
  std::optional<Enum> find(std::string_view name) const {
    for (const auto &[value, spelling] : entries)
      if (name == spelling)
        return value;
    return std::nullopt;
  }

  /// The value called `name`; throws Error naming the flag and the names it
  /// takes otherwise.
  Enum parse(const std::string &name) const {
    if (std::optional<Enum> value = find(name))
      return *value;
    throwUnknownName(flag, noun, name, names());
  }

  /// The name of `value` ("?" for a value the table lacks).
  const char *name(Enum value) const {
    for (const auto &[candidate, spelling] : entries)
      if (candidate == value)
        return spelling;
    return "?";
  }

  std::vector<std::string_view> names() const {
    std::vector<std::string_view> all;
    for (const auto &entry : entries)
      all.push_back(entry.second);
    return all;
  }
};

} // namespace snn::runtime

#endif // SNN_RUNTIME_SUPPORT_ENUMNAMES_H
