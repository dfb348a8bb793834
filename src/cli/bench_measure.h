#pragma once
// One timed measurement of `triattn bench`, through the real engine path (Sequence's steps):
// a prefill from an empty cache, or decode steps after the cache holds `depth` tokens, for
// one sequence or a batch of them stepped together (the server's batched forward pass).
#include <cstdint>
#include <span>
#include <vector>

#include "cli/bench_synthetic_kv.h"
#include "engine/kv_setup.h"
#include "model/forward.h"
#include "model/model.h"

namespace triattn::cli {

struct PrefillMeasure {
  double seconds = 0;          // wall time until the last token's logits (time to first token)
  size_t kv_peak_bytes = 0;    // largest live K+V during the prefill
  int64_t kv_peak_tokens = 0;  // largest stream during the prefill
  int64_t prune_events = 0;
};

// Feeds `tokens` to a fresh sequence (prefill, in the steps the policy allows).
PrefillMeasure time_prefill(const Model& model, Forward& forward, const PolicyFactory& policies,
                            std::span<const int32_t> tokens);

struct DecodeMeasure {
  int batch = 1;               // sequences stepped together
  int64_t steps = 0;           // tokens decoded, over all of them
  double seconds = 0;          // wall time of the decode steps (scoring included)
  double scoring_ms = 0;       // policy time inside those steps (Sequence's scoring_ms)
  double recall_ms = 0;        // recall events inside those steps (--kv-recall; Sequence's recall_ms)
  double kv_read_bytes = 0;    // mean K+V bytes one sequence's attention read per step (rows after append)
  size_t kv_peak_bytes = 0;    // largest live K+V of one sequence over fill and decode
  int64_t kv_peak_tokens = 0;  // largest stream over fill and decode
  int64_t prune_events = 0;    // during the decode steps
  ForwardPhases phases;        // with time_phases: the forward calls' time by phase (seconds)

  double tok_s() const { return seconds > 0 ? steps / seconds : 0; }  // summed over the batch
  double scoring_share() const { return seconds > 0 ? scoring_ms / 1000.0 / seconds : 0; }
  double recall_share() const { return seconds > 0 ? recall_ms / 1000.0 / seconds : 0; }
};

// Fills `batch` fresh sequences to `depth` with synthetic KV, then times `steps` forward
// steps of one token per sequence, all sequences in one forward call (greedy: each feeds the
// argmax of its previous logits, starting from first_token + its index). time_phases: also
// time the steps' forward calls by phase (ForwardPhases), in m.phases.
DecodeMeasure time_decode(const Model& model, Forward& forward, const PolicyFactory& policies, SyntheticKv& filler,
                          int64_t depth, int64_t steps, int32_t first_token, int batch = 1, bool time_phases = false);

// Median and sample standard deviation (0 for fewer than two values).
struct Spread {
  double median = 0, sd = 0;
};
Spread spread(std::vector<double> values);

}  // namespace triattn::cli
