#include "cli/bench_measure.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include "core/argmax.h"
#include "core/error.h"
#include "engine/sequence.h"
#include "engine/step.h"

namespace triattn::cli {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
}  // namespace

PrefillMeasure time_prefill(const Model& model, Forward& forward, const PolicyFactory& policies,
                            std::span<const int32_t> tokens) {
  Sequence seq(model, policies);
  // As in time_decode: full attention's streams sized once, not doubled and copied on the way.
  if (seq.memory_bound() == 0) seq.cache().reserve(static_cast<int64_t>(tokens.size()));
  EngineStep step(forward);
  const auto t0 = Clock::now();
  feed(step, seq, tokens);
  PrefillMeasure m;
  m.seconds = seconds_since(t0);
  m.kv_peak_bytes = seq.cache().peak_bytes();
  m.kv_peak_tokens = seq.cache().peak_tokens();
  m.prune_events = seq.cache().prune_events();
  return m;
}

DecodeMeasure time_decode(const Model& model, Forward& forward, const PolicyFactory& policies, SyntheticKv& filler,
                          int64_t depth, int64_t steps, int32_t first_token, int batch, bool time_phases) {
  if (batch < 1) fail("bench: the batch must hold at least one sequence");
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (int b = 0; b < batch; ++b) {
    seqs.push_back(std::make_unique<Sequence>(model, policies));
    Sequence& seq = *seqs.back();
    // Sized once, as a generation sizes its sequence (engine/generation.cpp): full attention
    // for every token, so that the fill does not double-and-copy gigabytes; a bounded policy
    // for its bound, which lays the small streams out in huge pages (kv/kv_cache.h).
    // Capacity is not counted in the peak figures, live rows are.
    seq.reserve_for(depth + steps);
    filler.fill(seq, depth, forward.pool());
  }

  DecodeMeasure m;
  m.batch = batch;
  m.steps = steps * batch;
  double scoring0 = 0, recall0 = 0;
  int64_t prunes0 = 0;
  for (const auto& s : seqs) {
    scoring0 += s->stats().scoring_ms;
    recall0 += s->stats().recall_ms;
    prunes0 += s->cache().prune_events();
  }
  const int32_t vocab = model.config().vocab_size;
  std::vector<int32_t> tokens(static_cast<size_t>(batch));
  for (int b = 0; b < batch; ++b) tokens[static_cast<size_t>(b)] = (first_token + b) % vocab;
  EngineStep step(forward);
  std::vector<StepItem> items(static_cast<size_t>(batch));
  double kv_bytes_sum = 0;
  // Unset however the loop ends (m is gone after a throw).
  struct PhaseTiming {
    Forward& f;
    ~PhaseTiming() { f.time_phases(nullptr); }
  } phase_timing{forward};
  if (time_phases) forward.time_phases(&m.phases);
  for (int64_t i = 0; i < steps; ++i) {
    const auto t0 = Clock::now();
    for (int b = 0; b < batch; ++b) {
      StepItem& it = items[static_cast<size_t>(b)];
      it.seq = seqs[static_cast<size_t>(b)].get();
      it.tokens = std::span<const int32_t>(&tokens[static_cast<size_t>(b)], 1);
    }
    step.run(items);
    for (const StepItem& it : items)
      if (it.error) std::rethrow_exception(it.error);
    m.seconds += seconds_since(t0);
    for (int b = 0; b < batch; ++b) {
      const std::vector<float>& l = step.logits(static_cast<size_t>(b));
      if (l.empty()) fail("bench: decode step returned no logits");
      tokens[static_cast<size_t>(b)] = static_cast<int32_t>(std::max<int64_t>(0, argmax(l)));
      // After the append, the cache holds exactly the rows this step's attention read.
      kv_bytes_sum += static_cast<double>(seqs[static_cast<size_t>(b)]->cache().bytes_in_use());
    }
  }
  for (const auto& s : seqs) {
    m.scoring_ms += s->stats().scoring_ms;
    m.recall_ms += s->stats().recall_ms;
    m.prune_events += s->cache().prune_events();
    m.kv_peak_bytes = std::max(m.kv_peak_bytes, s->cache().peak_bytes());
    m.kv_peak_tokens = std::max(m.kv_peak_tokens, s->cache().peak_tokens());
  }
  m.scoring_ms -= scoring0;
  m.recall_ms -= recall0;
  m.prune_events -= prunes0;
  m.kv_read_bytes = m.steps > 0 ? kv_bytes_sum / static_cast<double>(m.steps) : 0;
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
