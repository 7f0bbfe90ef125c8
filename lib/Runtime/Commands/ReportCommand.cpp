//===- ReportCommand.cpp - The `snn-run report` command -------------------===//

#include "snn/Runtime/Commands/ReportCommand.h"
#include "snn/Runtime/Commands/CommandSupport.h"
#include "snn/Runtime/Observability/ReportPage.h"
#include "snn/Runtime/Observability/RunReport.h"
#include "snn/Runtime/Support/DurableFile.h"

#include <iostream>

namespace snn::runtime {

void runReport(const ReportOptions &options) {
  checkParentDirectory(options.outputPath, "-o");
  std::string page = reportPage(reportData(options.logPath, options.tracePath),
                                options.logPath);
  replaceFileDurably(options.outputPath, page);
  std::cerr << "snn-run: wrote " << options.outputPath << " (" << page.size() / 1024
            << " KiB)" << std::endl;
}

} // namespace snn::runtime
