#pragma once
// Sampler chain (as llama.cpp's and vLLM's): logit bias -> repetition penalty -> frequency and
// presence penalties -> grammar mask -> top-k -> temperature -> top-p -> min-p -> draw.
// temperature <= 0 means greedy (argmax of the biased, penalised and masked logits).
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <span>
#include <vector>

namespace triattn {

struct LogitBias {
  int32_t id;
  float bias;
};

struct SamplerParams {
  float temperature = 0.8f;
  int top_k = 40;            // <= 0: disabled
  float top_p = 0.95f;       // >= 1: disabled
  float min_p = 0.05f;       // <= 0: disabled
  float repeat_penalty = 1.0f;  // 1: disabled
  int repeat_last_n = 64;        // -1: the whole history; 0: off
  // OpenAI's: logit[t] -= count[t] * frequency_penalty + (count[t] > 0) * presence_penalty,
  // counting the tokens this generation produced (not the prompt). In [-2, 2]; 0: off.
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  // Added to these tokens' logits before anything else; each id once, bias in [-100, 100].
  std::vector<LogitBias> logit_bias;
  uint64_t seed = 0xC0FFEE;
};

// Throws Error naming the first parameter out of range (NaN is out of every range). The
// Sampler checks its parameters with it; frontends call it to refuse a request up front.
void validate(const SamplerParams& params);

struct Candidate {
  int32_t id;
  float logit;
  float p;
};

// One step of the chain. Steps see candidates sorted or not; each documents what it needs.
class SamplerStep {
 public:
  virtual ~SamplerStep() = default;
  virtual void apply(std::vector<Candidate>& cands, std::span<const int32_t> history) = 0;
};

// The bias, penalties and top-k work on the raw logits (one pass over the vocabulary, no
// candidate per token: a candidate per token was a measurable share of decode,
// docs/benchmarks.md "Sampler"); the later steps see only the top-k candidates, sorted best
// first.
class Sampler {
 public:
  explicit Sampler(const SamplerParams& params);
  // history: tokens so far (prompt + generated), for the repetition penalty; its last
  // `generated` tokens (default: all of it) are this generation's output, which the frequency
  // and presence penalties count. allowed: one bit per token id (a grammar's mask); the others
  // get -inf after the penalties, greedy included, and are never drawn. At least one token
  // must be allowed.
  int32_t sample(std::span<const float> logits, std::span<const int32_t> history,
                 const std::vector<uint64_t>* allowed = nullptr,
                 size_t generated = std::numeric_limits<size_t>::max());
  const SamplerParams& params() const { return params_; }
  // The first steps of the chain: logits, or a copy (valid until the next call) with the logit
  // bias and the penalties applied, as sample() sees them before the grammar mask.
  std::span<const float> penalised(std::span<const float> logits, std::span<const int32_t> history,
                                   size_t generated = std::numeric_limits<size_t>::max());

 private:
  // Calls f(logit, count) once for each distinct token of `tokens`, with that token's entry of
  // values_ and how often it occurs (ids outside values_ skipped: not tokens of this vocabulary).
  template <class F>
  void for_each_count(std::span<const int32_t> tokens, F&& f);
  // v with the tokens outside `allowed` at -inf (a copy, or values_ in place).
  std::span<const float> masked(std::span<const float> v, const std::vector<uint64_t>& allowed);
  // cands_ = the k best of v (k < v.size()), best first; NaNs are never taken.
  void select_top_k(std::span<const float> v, size_t k);

  SamplerParams params_;
  std::vector<std::unique_ptr<SamplerStep>> steps_;  // temperature, top-p, min-p
  std::mt19937_64 rng_;
  std::vector<Candidate> cands_;
  std::vector<float> values_;  // penalised logits
  std::vector<int32_t> seen_;  // the counted tokens, sorted
};

}  // namespace triattn
