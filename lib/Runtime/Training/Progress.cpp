//===- Progress.cpp - Training progress on stderr -------------------------===//

#include "snn/Runtime/Training/Progress.h"

#include <algorithm>
#include <unistd.h>

namespace snn::runtime {

namespace {

constexpr auto kBarInterval = std::chrono::milliseconds(100);
constexpr auto kLineInterval = std::chrono::seconds(10);
constexpr int kBarWidth = 24;

} // namespace

Progress::Mode Progress::detectMode() {
  return ::isatty(STDERR_FILENO) ? Mode::Bar : Mode::Lines;
}

Progress::Mode Progress::modeFor(ProgressSetting setting) {
  switch (setting) {
  case ProgressSetting::Auto:
    return detectMode();
  case ProgressSetting::Bar:
    return Mode::Bar;
  case ProgressSetting::Lines:
    return Mode::Lines;
  case ProgressSetting::None:
    return Mode::Off;
  }
  return Mode::Off;
}

Progress::Progress(Mode mode, int64_t totalSteps, int64_t batchesPerEpoch,
                   std::FILE *out)
    : mode(mode), totalSteps(totalSteps), batchesPerEpoch(batchesPerEpoch),
      out(out), lastPrint(Clock::now()) {}

void Progress::step(const StepMetrics &metrics, int64_t batch) {
  if (mode == Mode::Off)
    return;
  Clock::time_point now = Clock::now();
  bool last = metrics.step + 1 == totalSteps;
  if (mode == Mode::Bar && (now - lastPrint >= kBarInterval || last)) {
    drawBar(metrics, batch);
    lastPrint = now;
  } else if (mode == Mode::Lines && now - lastPrint >= kLineInterval) {
    printLine(metrics, batch);
    lastPrint = now;
  }
}

void Progress::drawBar(const StepMetrics &metrics, int64_t batch) {
  int64_t done = batch + 1;
  int filled = int(kBarWidth * done / std::max<int64_t>(1, batchesPerEpoch));
  std::string bar(size_t(filled), '=');
  if (filled < kBarWidth)
    bar += '>' + std::string(size_t(kBarWidth - filled - 1), ' ');
  std::fprintf(out,
               "\repoch %lld [%s] %lld/%lld  loss %.4f  acc %.4f  %.0f "
               "samples/s  step %lld/%lld \033[K",
               static_cast<long long>(metrics.epoch), bar.c_str(),
               static_cast<long long>(done),
               static_cast<long long>(batchesPerEpoch), metrics.loss,
               metrics.accuracy, metrics.samplesPerSecond,
               static_cast<long long>(metrics.step + 1),
               static_cast<long long>(totalSteps));
  std::fflush(out);
  barOpen = true;
}

void Progress::printLine(const StepMetrics &metrics, int64_t batch) {
  std::fprintf(out,
               "epoch %lld batch %lld/%lld step %lld/%lld: loss %.4f "
               "accuracy %.4f lr %.6g %.0f samples/s\n",
               static_cast<long long>(metrics.epoch),
               static_cast<long long>(batch + 1),
               static_cast<long long>(batchesPerEpoch),
               static_cast<long long>(metrics.step + 1),
               static_cast<long long>(totalSteps), metrics.loss,
               metrics.accuracy, metrics.lr, metrics.samplesPerSecond);
  std::fflush(out);
}

void Progress::endBar() {
  if (barOpen)
    std::fputc('\n', out);
  barOpen = false;
}

void Progress::epoch(const EpochMetrics &metrics) {
  if (mode == Mode::Off)
    return;
  endBar();
  std::fprintf(out, "epoch %lld: loss %.4f accuracy %.4f",
               static_cast<long long>(metrics.epoch), metrics.loss,
               metrics.accuracy);
  if (metrics.hasEval)
    std::fprintf(out, " eval_loss %.4f eval_accuracy %.4f", metrics.eval.loss,
                 metrics.eval.accuracy);
  std::fprintf(out, " (%lld steps, %.1f s)\n",
               static_cast<long long>(metrics.steps), metrics.seconds);
  std::fflush(out);
}

void Progress::warning(const std::string &text) {
  endBar();
  std::fprintf(out, "warning: %s\n", text.c_str());
  std::fflush(out);
}

void Progress::finish() {
  if (mode != Mode::Off)
    endBar();
}

} // namespace snn::runtime
