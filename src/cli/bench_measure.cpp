#include "cli/bench_measure.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/error.h"
#include "engine/sequence.h"

namespace triattn::cli {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
}  // namespace

double time_prefill(const Model& model, Forward& forward, const PolicyFactory& policies,
                    std::span<const int32_t> tokens) {
  Sequence seq(model, policies);
  const auto t0 = Clock::now();
  seq.feed(tokens, forward);
  return seconds_since(t0);
}

DecodeMeasure time_decode(const Model& model, Forward& forward, const PolicyFactory& policies, SyntheticKv& filler,
                          int64_t depth, int64_t steps, int32_t first_token) {
  Sequence seq(model, policies);
  // Full attention grows without bound: size the streams once so that the fill does not
  // double-and-copy gigabytes (capacity is not counted in the peak figures, live rows are).
  if (seq.memory_bound() == 0) seq.cache().reserve(depth + steps);
  filler.fill(seq, depth, forward.pool());

  DecodeMeasure m;
  m.steps = steps;
  const double scoring0 = seq.stats().scoring_ms;
  const int64_t prunes0 = seq.cache().prune_events();
  int32_t token = first_token;
  double kv_bytes_sum = 0;
  for (int64_t i = 0; i < steps; ++i) {
    const auto t0 = Clock::now();
    const std::vector<float> logits = seq.feed(std::span<const int32_t>(&token, 1), forward);
    m.seconds += seconds_since(t0);
    // After the append, the cache holds exactly the rows this step's attention read.
    kv_bytes_sum += static_cast<double>(seq.cache().bytes_in_use());
    if (logits.empty()) fail("bench: decode step returned no logits");
    token = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  m.scoring_ms = seq.stats().scoring_ms - scoring0;
  m.prune_events = seq.cache().prune_events() - prunes0;
  m.kv_read_bytes = steps > 0 ? kv_bytes_sum / static_cast<double>(steps) : 0;
  seq.update_stats();
  m.kv_peak_bytes = seq.cache().peak_bytes();
  m.kv_peak_tokens = seq.cache().peak_tokens();
  return m;
}

Spread spread(std::vector<double> v) {
  Spread s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  if (n < 2) return s;
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(n);
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  s.sd = std::sqrt(ss / static_cast<double>(n - 1));
  return s;
}

}  // namespace triattn::cli
