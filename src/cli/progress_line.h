#pragma once
// A long run's progress on stderr. On a terminal, one line rewritten in place ("\r"); in a log
// file or a pipe, a plain line every `interval_s` seconds and one at the end, so the log shows
// the run's course without thousands of carriage returns.
#include <chrono>
#include <string>

namespace triattn::cli {

class ProgressLine {
 public:
  explicit ProgressLine(double interval_s = 10);
  // The current state; `last`: the final update (always shown).
  void update(const std::string& text, bool last = false);
  // Ends the rewritten line on a terminal (nothing otherwise).
  void finish();

 private:
  bool tty_;
  double interval_s_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_shown_{};
};

}  // namespace triattn::cli
