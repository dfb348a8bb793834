#include "engine/sampler.h"

#include <algorithm>
#include <cmath>

#include "core/argmax.h"
#include "core/error.h"

namespace triattn {

namespace {

// Candidate order of the chain: higher logit first, lower id first among equal logits. A
// lambda object, not a function: std algorithms inline a lambda's call, not a function
// pointer's, and the sorts below compare up to the whole vocabulary.
constexpr auto better = [](const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
};

// logit := (logit - max) / t over the candidates, so the best is 0 and the rest <= 0: no
// overflow for any t > 0 (a t like 1e-45 sends every other logit to -inf, i.e. greedy), and
// infinite logits do not turn into NaN (inf - inf): the candidates equal to an infinite
// maximum share the mass, the others get none.
void shift_scale(std::vector<Candidate>& c, float t) {
  float mx = -INFINITY;
  for (const Candidate& x : c) mx = std::max(mx, x.logit);
  for (Candidate& x : c) x.logit = std::isfinite(mx) ? (x.logit - mx) / t : (x.logit == mx ? 0.0f : -INFINITY);
}

// p = softmax(logit) over the current candidates. The best candidate has logit 0 after
// shift_scale, so its weight is 1 and the sum never underflows to 0.
void normalise(std::vector<Candidate>& c) {
  shift_scale(c, 1.0f);
  double sum = 0;
  for (Candidate& x : c) sum += (x.p = std::exp(x.logit));
  for (Candidate& x : c) x.p = static_cast<float>(x.p / sum);
}

class Temperature : public SamplerStep {
 public:
  explicit Temperature(float t) : t_(t) {}
  void apply(std::vector<Candidate>& c, std::span<const int32_t>) override { shift_scale(c, t_); }

 private:
  float t_;
};

// Smallest prefix of the sorted candidates whose probability mass reaches p. Without top-k
// the candidates are the whole vocabulary, and sorting all of them is slow for a large
// vocabulary (docs/benchmarks.md, "Sampler"); the prefix is usually short, so only a growing head is selected and sorted (8x
// larger each time).
class TopP : public SamplerStep {
 public:
  explicit TopP(float p) : p_(p) {}
  void apply(std::vector<Candidate>& c, std::span<const int32_t>) override {
    if (c.empty()) return;
    float mx = -INFINITY;
    for (const Candidate& x : c) mx = std::max(mx, x.logit);
    double sum = 0;
    for (const Candidate& x : c) sum += std::exp(x.logit - mx);
    size_t head = std::min(c.size(), kFirstHead), done = 0;
    double mass = 0;
    for (;;) {
      // The best of the rest into [done, head) in O(n), then in order.
      const auto first = c.begin() + static_cast<std::ptrdiff_t>(done), mid = c.begin() + static_cast<std::ptrdiff_t>(head);
      std::nth_element(first, mid, c.end(), better);
      std::sort(first, mid, better);
      for (size_t i = done; i < head; ++i) {
        c[i].p = static_cast<float>(std::exp(c[i].logit - mx) / sum);
        mass += c[i].p;
        if (mass >= p_) {
          c.resize(i + 1);
          return;
        }
      }
      if (head == c.size()) return;  // rounding left the mass short of p: keep everything
      done = head;
      head = std::min(c.size(), head * 8);
    }
  }

 private:
  static constexpr size_t kFirstHead = 256;
  float p_;
};

// Drops candidates whose probability is below min_p times the best one's; min_p <= 1, so
// the best one always stays.
class MinP : public SamplerStep {
 public:
  explicit MinP(float p) : p_(p) {}
  void apply(std::vector<Candidate>& c, std::span<const int32_t>) override {
    float mx = -INFINITY;
    for (const Candidate& x : c) mx = std::max(mx, x.logit);
    const float threshold = mx + std::log(p_);
    std::erase_if(c, [&](const Candidate& x) { return x.logit < threshold; });
  }

 private:
  float p_;
};

}  // namespace

void validate(const SamplerParams& p) {
  // Written as !(in range) so that NaN fails every check.
  if (!(std::isfinite(p.temperature) && p.temperature >= 0))
    fail("sampling: temperature must be a finite number >= 0 (0 = greedy), got ", p.temperature);
  if (p.top_k < 0) fail("sampling: top_k must be >= 0 (0 = off), got ", p.top_k);
  if (!(p.top_p >= 0 && p.top_p <= 1)) fail("sampling: top_p must be in [0, 1] (1 = off), got ", p.top_p);
  if (!(p.min_p >= 0 && p.min_p <= 1)) fail("sampling: min_p must be in [0, 1] (0 = off), got ", p.min_p);
  if (!(std::isfinite(p.repeat_penalty) && p.repeat_penalty > 0))
    fail("sampling: repeat_penalty must be a finite number > 0 (1 = off), got ", p.repeat_penalty);
  if (p.repeat_last_n < -1)
    fail("sampling: repeat_last_n must be >= -1 (-1 = the whole history, 0 = off), got ", p.repeat_last_n);
  if (!(p.frequency_penalty >= -2 && p.frequency_penalty <= 2))
    fail("sampling: frequency_penalty must be in [-2, 2] (0 = off), got ", p.frequency_penalty);
  if (!(p.presence_penalty >= -2 && p.presence_penalty <= 2))
    fail("sampling: presence_penalty must be in [-2, 2] (0 = off), got ", p.presence_penalty);
  for (size_t i = 0; i < p.logit_bias.size(); ++i) {
    const LogitBias& b = p.logit_bias[i];
    if (b.id < 0) fail("sampling: logit_bias token ids must be >= 0, got ", b.id);
    if (!(b.bias >= -100 && b.bias <= 100))
      fail("sampling: logit_bias for token ", b.id, " must be in [-100, 100], got ", b.bias);
    for (size_t j = 0; j < i; ++j)
      if (p.logit_bias[j].id == b.id) fail("sampling: logit_bias names token ", b.id, " twice");
  }
}

Sampler::Sampler(const SamplerParams& params) : params_(params), rng_(params.seed) {
  validate(params);
  if (params.temperature > 0) {
    steps_.push_back(std::make_unique<Temperature>(params.temperature));
    if (params.top_p < 1.0f) steps_.push_back(std::make_unique<TopP>(params.top_p));
    if (params.min_p > 0.0f) steps_.push_back(std::make_unique<MinP>(params.min_p));
  }
}

template <class F>
void Sampler::for_each_count(std::span<const int32_t> tokens, F&& f) {
  // Sorted, each run of one id is that id's count: no table the size of the vocabulary.
  seen_.assign(tokens.begin(), tokens.end());
  std::sort(seen_.begin(), seen_.end());
  for (size_t i = 0; i < seen_.size();) {
    size_t j = i + 1;
    while (j < seen_.size() && seen_[j] == seen_[i]) ++j;
    const int32_t id = seen_[i];
    if (id >= 0 && static_cast<size_t>(id) < values_.size()) f(values_[static_cast<size_t>(id)], j - i);
    i = j;
  }
}

std::span<const float> Sampler::penalised(std::span<const float> logits, std::span<const int32_t> history,
                                          size_t generated) {
  const SamplerParams& p = params_;
  const bool repeat = p.repeat_penalty != 1.0f && p.repeat_last_n != 0;
  const bool additive = p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f;
  if (p.logit_bias.empty() && !repeat && !additive) return logits;
  // A copy with the changes, so that the selection below reads one array; copying is a few
  // percent of the scan it saves.
  values_.assign(logits.begin(), logits.end());
  for (const LogitBias& b : p.logit_bias) {
    if (static_cast<size_t>(b.id) >= values_.size())
      fail("sampler: logit_bias names token ", b.id, ", outside the vocabulary (", values_.size(), " tokens)");
    values_[static_cast<size_t>(b.id)] += b.bias;
  }
  if (repeat) {  // each token of the window once, however often it occurs (as llama.cpp)
    const size_t last = p.repeat_last_n < 0 ? history.size() : std::min(history.size(), static_cast<size_t>(p.repeat_last_n));
    for_each_count(history.last(last), [&](float& x, size_t) { x = x > 0 ? x / p.repeat_penalty : x * p.repeat_penalty; });
  }
  if (additive)
    for_each_count(history.last(std::min(generated, history.size())), [&](float& x, size_t count) {
      x -= static_cast<float>(count) * p.frequency_penalty + p.presence_penalty;
    });
  return values_;
}

void Sampler::select_top_k(std::span<const float> v, size_t k) {
  // One pass keeping the k best in a heap ordered by `better`, so its top is the worst of
  // them: after the first k, a logit enters only if it beats that worst one, and ids only
  // grow, so equal logits never do (the lower id is already in). Sorted at the end into the
  // chain's order.
  cands_.clear();
  for (size_t i = 0; i < v.size(); ++i) {
    const float x = v[i];
    if (cands_.size() == k) {
      if (!(x > cands_.front().logit)) continue;  // also skips NaN
      std::pop_heap(cands_.begin(), cands_.end(), better);
      cands_.back() = {static_cast<int32_t>(i), x, 0.0f};
    } else {
      if (std::isnan(x)) continue;
      cands_.push_back({static_cast<int32_t>(i), x, 0.0f});
    }
    std::push_heap(cands_.begin(), cands_.end(), better);
  }
  std::sort(cands_.begin(), cands_.end(), better);
}

std::span<const float> Sampler::masked(std::span<const float> v, const std::vector<uint64_t>& allowed) {
  if (allowed.size() * 64 < v.size()) fail("sampler: the token mask is shorter than the vocabulary");
  if (v.data() != values_.data()) values_.assign(v.begin(), v.end());
  for (size_t w = 0; w * 64 < values_.size(); ++w) {
    const uint64_t bits = allowed[w];
    if (bits == ~uint64_t{0}) continue;
    const size_t end = std::min(values_.size(), w * 64 + 64);
    for (size_t i = w * 64; i < end; ++i)
      if (!((bits >> (i - w * 64)) & 1)) values_[i] = -INFINITY;
  }
  return values_;
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history,
                        const std::vector<uint64_t>* allowed, size_t generated) {
  if (logits.empty()) fail("sampler: no logits");
  std::span<const float> v = penalised(logits, history, generated);
  if (allowed) v = masked(v, *allowed);
  if (params_.temperature <= 0) {  // greedy: first maximum (lowest id on ties)
    const int64_t best = argmax(v);
    if (best < 0) fail("sampler: every logit is NaN");
    if (allowed && !(((*allowed)[static_cast<size_t>(best) >> 6] >> (best & 63)) & 1))
      fail("sampler: the grammar allows no token with a number for a logit");
    return static_cast<int32_t>(best);
  }
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < v.size()) {
    select_top_k(v, static_cast<size_t>(params_.top_k));
  } else {  // no top-k: every token but NaNs (the sorts below need an order), in id order
    cands_.clear();
    for (size_t i = 0; i < v.size(); ++i)
      if (!std::isnan(v[i])) cands_.push_back({static_cast<int32_t>(i), v[i], 0.0f});
  }
  // Masked tokens (-inf) never enter the draw, not even as the rounding fallback below.
  if (allowed) std::erase_if(cands_, [](const Candidate& c) { return c.logit == -INFINITY; });
  if (cands_.empty()) fail(allowed ? "sampler: the grammar allows no token here" : "sampler: every logit is NaN");
  for (auto& step : steps_) step->apply(cands_, history);
  normalise(cands_);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  double r = u(rng_), acc = 0;
  for (const Candidate& x : cands_) {
    acc += x.p;
    if (r < acc) return x.id;
  }
  return cands_.back().id;
}

}  // namespace triattn
