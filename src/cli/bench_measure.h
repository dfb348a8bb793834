#pragma once
// One timed measurement of `triattn bench`, through the real engine path (Sequence::feed):
// a prefill from an empty cache, or decode steps after the cache holds `depth` tokens.
#include <cstdint>
#include <span>
#include <vector>

#include "cli/bench_synthetic_kv.h"
#include "engine/kv_setup.h"
#include "model/forward.h"
#include "model/model.h"

namespace triattn::cli {

// Seconds to feed `tokens` to a fresh sequence (prefill, in the steps the policy allows).
double time_prefill(const Model& model, Forward& forward, const PolicyFactory& policies,
                    std::span<const int32_t> tokens);

struct DecodeMeasure {
  int64_t steps = 0;
  double seconds = 0;          // wall time of the decode steps (scoring included)
  double scoring_ms = 0;       // policy time inside those steps (Sequence's scoring_ms)
  double kv_read_bytes = 0;    // mean K+V bytes attention read per step (rows held after append)
  size_t kv_peak_bytes = 0;    // largest live K+V over fill and decode
  int64_t kv_peak_tokens = 0;  // largest stream over fill and decode
  int64_t prune_events = 0;    // during the decode steps

  double tok_s() const { return seconds > 0 ? steps / seconds : 0; }
  double scoring_share() const { return seconds > 0 ? scoring_ms / 1000.0 / seconds : 0; }
};

// Fills a fresh sequence to `depth` with synthetic KV, then times `steps` single-token feeds
// (greedy: each step feeds the argmax of the previous logits, starting from `first_token`).
DecodeMeasure time_decode(const Model& model, Forward& forward, const PolicyFactory& policies, SyntheticKv& filler,
                          int64_t depth, int64_t steps, int32_t first_token);

// Median and sample standard deviation (0 for fewer than two values).
struct Spread {
  double median = 0, sd = 0;
};
Spread spread(std::vector<double> values);

}  // namespace triattn::cli
