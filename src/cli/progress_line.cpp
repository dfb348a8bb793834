#include "cli/progress_line.h"

#include <unistd.h>

#include <cstdio>

namespace triattn::cli {

ProgressLine::ProgressLine(double interval_s) : tty_(::isatty(STDERR_FILENO) == 1), interval_s_(interval_s) {}

void ProgressLine::update(const std::string& text, bool last) {
  const auto now = std::chrono::steady_clock::now();
  if (tty_) {
    std::fprintf(stderr, "\r%s", text.c_str());
  } else {
    if (!last && shown_ && std::chrono::duration<double>(now - last_shown_).count() < interval_s_) return;
    std::fprintf(stderr, "%s\n", text.c_str());
  }
  std::fflush(stderr);
  shown_ = true;
  last_shown_ = now;
}

void ProgressLine::finish() {
  if (tty_ && shown_) std::fprintf(stderr, "\n");
}

}  // namespace triattn::cli
