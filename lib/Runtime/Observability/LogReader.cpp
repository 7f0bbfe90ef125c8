//===- LogReader.cpp - Reading a JSON-lines training log ------------------===//

#include "LogReader.h"
#include "snn/Runtime/Support/DurableFile.h"
#include "snn/Runtime/Support/Error.h"

#include <iostream>
#include <limits>
#include <regex>

namespace snn::runtime {

namespace {

/// The JSON of one line, or Error naming its place.
LogJson parseLine(const std::string &text, const std::string &where) {
  LogJson event;
  try {
    event = LogJson::parse(text);
  } catch (const LogJson::parse_error &e) {
    int64_t line = 1;
    throw Error(where + ": not JSON (" + parseErrorReason(e.what(), line) + ")");
  }
  if (!event.is_object() || !event.contains("event") || !event["event"].is_string())
    throw Error(where + ": not a log event (a JSON object with a string \"event\")");
  return event;
}

} // namespace

std::vector<LogEvent> readLogEvents(const std::string &path) {
  std::string bytes = readWholeFile(path);
  std::vector<LogEvent> events;
  size_t start = 0;
  for (int64_t line = 1; start < bytes.size(); ++line) {
    size_t end = bytes.find('\n', start);
    bool finished = end != std::string::npos;
    std::string text = bytes.substr(start, finished ? end - start : std::string::npos);
    start = finished ? end + 1 : bytes.size();
    if (text.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    std::string where = path + ":" + std::to_string(line);
    try {
      events.push_back({where, parseLine(text, where)});
    } catch (const Error &) {
      if (finished)
        throw;
      std::cerr << "snn-run: " << where
                << ": an unfinished last line (the run stopped while writing it) left out"
                << std::endl;
    }
  }
  return events;
}

std::string parseErrorReason(const std::string &what, int64_t &line) {
  // "[json.exception.parse_error.101] parse error at line 3, column 1: syntax error ..."
  static const std::regex kPlace(R"(at line (\d+), column (\d+): (.*)$)");
  std::smatch m;
  if (!std::regex_search(what, m, kPlace))
    return what;
  line = std::stoll(m[1].str());
  return "column " + m[2].str() + ": " + m[3].str();
}

double requireNumber(const LogEvent &event, const char *key, bool nullable) {
  auto it = event.event.find(key);
  if (it != event.event.end() && it->is_number())
    return it->get<double>();
  if (nullable && it != event.event.end() && it->is_null())
    return std::numeric_limits<double>::quiet_NaN();
  throw Error(event.where + ": " + event.kind() + " event: '" + key + "' " +
              (it == event.event.end() ? "is missing" : "is not a number"));
}

int64_t requireInteger(const LogEvent &event, const char *key) {
  auto it = event.event.find(key);
  if (it != event.event.end() && it->is_number_integer())
    return it->get<int64_t>();
  throw Error(event.where + ": " + event.kind() + " event: '" + key + "' " +
              (it == event.event.end() ? "is missing" : "is not an integer"));
}

} // namespace snn::runtime
