//===- ReportPage.cpp - The `snn-run report` HTML page --------------------===//

#include "snn/Runtime/Observability/ReportPage.h"
#include "snn/Runtime/Support/Error.h"

#include <string_view>

namespace snn::runtime {

namespace {

// ReportPage.html, made a raw string literal by CMakeLists.txt at configure time.
constexpr std::string_view kTemplate =
#include "ReportPage.html.inc"
    ;

std::string escapeHtml(const std::string &text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    default: out += c;
    }
  }
  return out;
}

/// JSON that cannot end its <script> element: every '<' (only ever inside a
/// string) as its \u escape.
std::string scriptSafeJson(const std::string &json) {
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    if (c == '<')
      out += "\\u003c";
    else
      out += c;
  }
  return out;
}

void replaceOnce(std::string &page, std::string_view mark, const std::string &with) {
  size_t at = page.find(mark);
  if (at == std::string::npos)
    throw Error("report page template lacks " + std::string(mark));
  page.replace(at, mark.size(), with);
}

} // namespace

std::string reportPage(const std::string &dataJson, const std::string &logPath) {
  std::string page(kTemplate);
  replaceOnce(page, "{{SNN_REPORT_TITLE}}", "SpikeMesh report: " + escapeHtml(logPath));
  replaceOnce(page, "{{SNN_REPORT_DATA}}", scriptSafeJson(dataJson));
  return page;
}

} // namespace snn::runtime
