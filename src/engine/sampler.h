#pragma once
// Sampler chain (as llama.cpp's): repetition penalty -> top-k -> temperature -> top-p ->
// min-p -> draw. temperature <= 0 means greedy (argmax of the penalised logits).
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <vector>

namespace triattn {

struct SamplerParams {
  float temperature = 0.8f;
  int top_k = 40;            // <= 0: disabled
  float top_p = 0.95f;       // >= 1: disabled
  float min_p = 0.05f;       // <= 0: disabled
  float repeat_penalty = 1.0f;  // 1: disabled
  int repeat_last_n = 64;
  uint64_t seed = 0xC0FFEE;
};

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

class Sampler {
 public:
  explicit Sampler(const SamplerParams& params);
  // history: tokens so far (prompt + generated), for the repetition penalty.
  int32_t sample(std::span<const float> logits, std::span<const int32_t> history);
  const SamplerParams& params() const { return params_; }

 private:
  SamplerParams params_;
  std::vector<std::unique_ptr<SamplerStep>> steps_;
  std::mt19937_64 rng_;
  std::vector<Candidate> cands_;
};

}  // namespace triattn
