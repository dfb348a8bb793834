#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "core/error.h"

namespace triattn {

namespace {

void sort_desc(std::vector<Candidate>& c) {
  std::stable_sort(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) { return a.logit > b.logit; });
}

// p = softmax(logit) over the current candidates.
void normalise(std::vector<Candidate>& c) {
  float mx = -INFINITY;
  for (const Candidate& x : c) mx = std::max(mx, x.logit);
  double sum = 0;
  for (Candidate& x : c) sum += (x.p = std::exp(x.logit - mx));
  for (Candidate& x : c) x.p = static_cast<float>(x.p / sum);
}

class RepetitionPenalty : public SamplerStep {
 public:
  RepetitionPenalty(float penalty, int last_n) : penalty_(penalty), last_n_(last_n) {}
  void apply(std::vector<Candidate>& c, std::span<const int32_t> history) override {
    const size_t n = last_n_ < 0 ? history.size() : std::min(history.size(), static_cast<size_t>(last_n_));
    std::unordered_set<int32_t> seen(history.end() - static_cast<std::ptrdiff_t>(n), history.end());
    for (Candidate& x : c)
      if (seen.count(x.id)) x.logit = x.logit > 0 ? x.logit / penalty_ : x.logit * penalty_;
  }

 private:
  float penalty_;
  int last_n_;
};

class TopK : public SamplerStep {
 public:
  explicit TopK(int k) : k_(k) {}
  void apply(std::vector<Candidate>& c, std::span<const int32_t>) override {
    const size_t k = std::min(c.size(), static_cast<size_t>(k_));
    std::partial_sort(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(k), c.end(),
                      [](const Candidate& a, const Candidate& b) { return a.logit > b.logit || (a.logit == b.logit && a.id < b.id); });
    c.resize(k);
  }

 private:
  int k_;
};

class Temperature : public SamplerStep {
 public:
  explicit Temperature(float t) : t_(t) {}
  void apply(std::vector<Candidate>& c, std::span<const int32_t>) override {
    for (Candidate& x : c) x.logit /= t_;
  }

 private:
  float t_;
};

// Smallest prefix of the sorted candidates whose probability mass reaches p.
class TopP : public SamplerStep {
 public:
  explicit TopP(float p) : p_(p) {}
  void apply(std::vector<Candidate>& c, std::span<const int32_t>) override {
    sort_desc(c);
    normalise(c);
    double mass = 0;
    size_t keep = c.size();
    for (size_t i = 0; i < c.size(); ++i) {
      mass += c[i].p;
      if (mass >= p_) {
        keep = i + 1;
        break;
      }
    }
    c.resize(std::max<size_t>(1, keep));
  }

 private:
  float p_;
};

// Drops candidates whose probability is below min_p times the best one's.
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

Sampler::Sampler(const SamplerParams& params) : params_(params), rng_(params.seed) {
  if (params.repeat_penalty <= 0) fail("repeat penalty must be positive, got ", params.repeat_penalty);
  if (params.repeat_penalty != 1.0f)
    steps_.push_back(std::make_unique<RepetitionPenalty>(params.repeat_penalty, params.repeat_last_n));
  if (params.temperature > 0) {
    if (params.top_k > 0) steps_.push_back(std::make_unique<TopK>(params.top_k));
    steps_.push_back(std::make_unique<Temperature>(params.temperature));
    if (params.top_p < 1.0f) steps_.push_back(std::make_unique<TopP>(params.top_p));
    if (params.min_p > 0.0f) steps_.push_back(std::make_unique<MinP>(params.min_p));
  }
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
  if (logits.empty()) fail("sampler: no logits");
  cands_.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) cands_[i] = {static_cast<int32_t>(i), logits[i], 0.0f};
  for (auto& step : steps_) step->apply(cands_, history);
  if (params_.temperature <= 0) {  // greedy: first maximum (lowest id on ties)
    const auto best = std::max_element(cands_.begin(), cands_.end(), [](const Candidate& a, const Candidate& b) {
      return a.logit < b.logit || (a.logit == b.logit && a.id > b.id);
    });
    return best->id;
  }
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
