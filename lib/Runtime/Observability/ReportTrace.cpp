//===- ReportTrace.cpp - A pipeline trace for the report ------------------===//

#include "ReportTrace.h"
#include "snn/Runtime/Support/DurableFile.h"
#include "snn/Runtime/Support/Error.h"

#include <algorithm>
#include <cstdint>
#include <map>

namespace snn::runtime {

namespace {

LogJson parseTrace(const std::string &path) {
  std::string text = readWholeFile(path);
  LogJson trace;
  try {
    trace = LogJson::parse(text);
  } catch (const LogJson::parse_error &e) {
    int64_t line = 1;
    std::string reason = parseErrorReason(e.what(), line);
    throw Error(path + ":" + std::to_string(line) + ": not JSON (" + reason + ")");
  }
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array())
    throw Error(path + ":1: not a Chrome trace (no \"traceEvents\" array; written by "
                       "'snn-run train --trace'?)");
  return trace;
}

struct Span {
  int64_t rank, step;
  double ts, dur;
  std::string category, name;
};

/// A complete ("X") event as a span; Error naming its index otherwise.
Span spanOf(const LogJson &event, size_t index, const std::string &path) {
  auto fail = [&](const std::string &what) -> Error {
    return Error(path + ":1: traceEvents[" + std::to_string(index) + "]: " + what);
  };
  for (const char *key : {"ts", "dur"})
    if (!event.contains(key) || !event[key].is_number())
      throw fail(std::string("'") + key + "' is not a number");
  if (!event.contains("tid") || !event["tid"].is_number_integer())
    throw fail("'tid' (the rank) is not an integer");
  Span span{event["tid"].get<int64_t>(), 0, event["ts"].get<double>(),
            event["dur"].get<double>(), "", ""};
  if (event.contains("args") && event["args"].is_object() && event["args"].contains("step") &&
      event["args"]["step"].is_number_integer())
    span.step = event["args"]["step"].get<int64_t>();
  if (event.contains("cat") && event["cat"].is_string())
    span.category = event["cat"].get<std::string>();
  if (event.contains("name") && event["name"].is_string())
    span.name = event["name"].get<std::string>();
  return span;
}

} // namespace

LogJson traceSection(const std::string &path) {
  LogJson trace = parseTrace(path);
  std::map<int64_t, std::vector<Span>> bySteps;
  const LogJson &events = trace["traceEvents"];
  for (size_t i = 0; i < events.size(); ++i)
    if (events[i].is_object() && events[i].value("ph", "") == "X") {
      Span span = spanOf(events[i], i, path);
      bySteps[span.step].push_back(span);
    }
  if (bySteps.empty())
    throw Error(path + ":1: the trace holds no spans (ph \"X\")");
  LogJson categories = LogJson::array(), steps = LogJson::array(), spans = LogJson::array();
  std::map<std::string, size_t> categoryIndex;
  int64_t ranks = 0;
  for (const auto &[step, stepSpans] : bySteps) {
    if (!spans.empty() && spans.size() + stepSpans.size() > kMaxReportSpans)
      break;
    steps.push_back(step);
    for (const Span &s : stepSpans) {
      auto [at, added] = categoryIndex.emplace(s.category, categories.size());
      if (added)
        categories.push_back(s.category);
      spans.push_back({s.rank, s.step, s.ts, s.dur, at->second, s.name});
      ranks = std::max(ranks, s.rank + 1);
    }
  }
  return {{"file", path}, {"ranks", ranks}, {"categories", categories}, {"steps", steps},
          {"spans", spans}, {"total_steps", bySteps.size()}};
}

} // namespace snn::runtime
