//===- PipelineTrace.cpp - What each rank did when, for --trace -----------===//

#include "snn/Runtime/Pipeline/PipelineTrace.h"
#include "snn/Runtime/Distributed/Collectives.h"
#include "snn/Runtime/Support/DurableFile.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>

#include <algorithm>
#include <cstdio>
#include <limits>

namespace snn::runtime {

namespace {

constexpr int64_t kFields = 7; // kind, stage, mb, detail, step, start, end

int64_t nanoseconds(PipelineTrace::Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

const char *categoryOf(PipelineTrace::Kind kind) {
  switch (kind) {
  case PipelineTrace::Kind::Forward: return "forward";
  case PipelineTrace::Kind::Backward: return "backward";
  case PipelineTrace::Kind::WeightGrad: return "weight-grad";
  case PipelineTrace::Kind::Recompute: return "recompute";
  case PipelineTrace::Kind::SendActivation:
  case PipelineTrace::Kind::SendGradient: return "send";
  case PipelineTrace::Kind::Wait: return "recv-wait";
  }
  return "?";
}

at::Tensor encode(const std::vector<PipelineTrace::Span> &spans, int64_t rows) {
  at::Tensor table = at::full({rows, kFields}, -1, at::kLong);
  int64_t *cell = table.data_ptr<int64_t>();
  for (const PipelineTrace::Span &s : spans) {
    int64_t values[kFields] = {int64_t(s.kind), s.stage, s.microbatch, s.detail,
                               s.step, nanoseconds(s.start), nanoseconds(s.end)};
    std::copy(values, values + kFields, cell);
    cell += kFields;
  }
  return table;
}

std::vector<PipelineTrace::Span> decode(const int64_t *cell, int64_t rows) {
  std::vector<PipelineTrace::Span> spans;
  for (int64_t row = 0; row < rows && cell[0] >= 0; ++row, cell += kFields) {
    PipelineTrace::Span s;
    s.kind = PipelineTrace::Kind(cell[0]);
    s.stage = cell[1];
    s.microbatch = cell[2];
    s.detail = cell[3];
    s.step = cell[4];
    s.start = PipelineTrace::Clock::time_point(std::chrono::nanoseconds(cell[5]));
    s.end = PipelineTrace::Clock::time_point(std::chrono::nanoseconds(cell[6]));
    spans.push_back(s);
  }
  return spans;
}

} // namespace

void PipelineTrace::record(Kind kind, int64_t stage, int64_t microbatch, int64_t detail,
                           Clock::time_point start, Clock::time_point end) {
  recorded.push_back({kind, stage, microbatch, detail, step, start, end});
}

std::string PipelineTrace::nameOf(const Span &s) {
  std::string stage = "s" + std::to_string(s.stage), mb = " m" + std::to_string(s.microbatch);
  switch (s.kind) {
  case Kind::Forward: return "F " + stage + mb;
  case Kind::Backward: return "B " + stage + mb;
  case Kind::WeightGrad: return "W " + stage + mb;
  case Kind::Recompute: return "R " + stage + mb;
  case Kind::SendActivation: return "send " + stage + ">s" + std::to_string(s.detail) + mb;
  case Kind::SendGradient:
    return "send grad " + stage + ">s" + std::to_string(s.detail) + mb;
  case Kind::Wait:
    if (s.detail == 2)
      return "wait sends";
    return std::string("wait ") + (s.detail ? "B " : "F ") + stage + mb;
  }
  return "?";
}

std::string PipelineTrace::chromeTrace(const std::vector<std::vector<Span>> &ranks) {
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const auto &spans : ranks)
    for (const Span &s : spans)
      origin = std::min(origin, nanoseconds(s.start));
  std::string json = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[";
  char buffer[320];
  bool first = true;
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    std::snprintf(buffer, sizeof(buffer),
                  "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":%zu,"
                  "\"args\":{\"name\":\"rank %zu\"}}",
                  first ? "" : ",", rank, rank);
    json += buffer;
    first = false;
    for (const Span &s : ranks[rank]) {
      std::snprintf(buffer, sizeof(buffer),
                    ",{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":0,\"tid\":%zu,"
                    "\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"step\":%lld}}",
                    nameOf(s).c_str(), categoryOf(s.kind), rank,
                    double(nanoseconds(s.start) - origin) / 1000.0,
                    double(nanoseconds(s.end) - nanoseconds(s.start)) / 1000.0,
                    static_cast<long long>(s.step));
      json += buffer;
    }
  }
  return json + "]}\n";
}

void PipelineTrace::write(const dist::Group *world, const std::string &path) const {
  if (!world || !world->valid() || world->size() == 1) {
    replaceFileDurably(path, chromeTrace({recorded}));
    return;
  }
  at::Tensor rows = at::full({1}, int64_t(recorded.size()), at::kLong);
  dist::allReduce(*world, rows, dist::ReduceOp::Max);
  int64_t width = std::max<int64_t>(rows.item<int64_t>(), 1);
  at::Tensor all = dist::allGather(*world, encode(recorded, width));
  if (world->rank() != 0)
    return;
  std::vector<std::vector<Span>> ranks;
  for (int member = 0; member < world->size(); ++member)
    ranks.push_back(decode(all.data_ptr<int64_t>() + member * width * kFields, width));
  replaceFileDurably(path, chromeTrace(ranks));
}

} // namespace snn::runtime
