#include "eval/progress.h"

#include <unistd.h>

#include <cstdio>

namespace triattn::eval {

Progress::Progress(std::string label, int64_t total, bool enabled)
    : label_(std::move(label)),
      total_(total > 0 ? total : 1),
      enabled_(enabled),
      tty_(isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

Progress::~Progress() { finish(); }

void Progress::advance(int64_t n) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  done_ += n;
  draw(false);
}

void Progress::finish() {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  finished_ = true;
  draw(true);
}

void Progress::draw(bool final) {
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double frac = std::min(1.0, static_cast<double>(done_) / static_cast<double>(total_));
  const double eta = frac > 0 ? elapsed * (1 - frac) / frac : 0;
  if (tty_) {
    // Redraw at most ~10 times a second: the workers advance per token.
    if (!final && std::chrono::duration<double>(now - last_draw_).count() < 0.1) return;
    last_draw_ = now;
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(frac * kWidth);
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(kWidth, '.');
    std::fprintf(stderr, "\r%s [%s] %3.0f%% %lld/%lld %.0fs elapsed, ~%.0fs left%s", label_.c_str(), bar.c_str(),
                 frac * 100, static_cast<long long>(done_), static_cast<long long>(total_), elapsed, eta,
                 final ? "\n" : "  ");
    std::fflush(stderr);
    return;
  }
  const int decile = static_cast<int>(frac * 10);
  if (!final && decile <= last_decile_) return;
  if (final && last_decile_ >= 10) return;  // the 100% line was printed already
  last_decile_ = decile;
  std::fprintf(stderr, "%s: %3.0f%% (%lld/%lld) %.0fs elapsed, ~%.0fs left\n", label_.c_str(), frac * 100,
               static_cast<long long>(done_), static_cast<long long>(total_), elapsed, eta);
}

}  // namespace triattn::eval
