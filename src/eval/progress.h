#pragma once
// Progress of a long evaluation on stderr: a redrawn bar when stderr is a terminal, else a
// plain line every 10% (logs and CI keep a readable record). Thread-safe: the workers of one
// evaluation advance the same counter.
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace triattn::eval {

class Progress {
 public:
  // total: units of work (tokens, samples); label: what runs ("ppl", "needle").
  // enabled = false: silent (tests, --quiet).
  Progress(std::string label, int64_t total, bool enabled = true);
  ~Progress();
  void advance(int64_t n = 1);
  // Ends the bar (a final line); called by the destructor when not called before.
  void finish();

 private:
  void draw(bool final);

  std::mutex mu_;
  std::string label_;
  int64_t total_, done_ = 0;
  bool enabled_, tty_, finished_ = false;
  int last_decile_ = -1;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace triattn::eval
