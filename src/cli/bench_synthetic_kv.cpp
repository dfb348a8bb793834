#include "cli/bench_synthetic_kv.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "core/error.h"
#include "engine/step.h"

namespace triattn::cli {

namespace {

// Rotates every head of x (halves layout within the first `rot` coordinates: band f is
// (x[f], x[f + rot/2])) by angle·ω_f, where cos/sin hold the band angles already; the other
// d − rot coordinates (partial RoPE) are copied as they are.
void rotate(const float* in, float* out, int n_heads, int d, int rot, const double* cos, const double* sin) {
  const int half = rot / 2;
  for (int h = 0; h < n_heads; ++h) {
    const float* a = in + h * d;
    float* b = out + h * d;
    std::copy(a + rot, a + d, b + rot);
    for (int f = 0; f < half; ++f) {
      const double x = a[f], y = a[f + half];
      b[f] = static_cast<float>(x * cos[f] - y * sin[f]);
      b[f + half] = static_cast<float>(x * sin[f] + y * cos[f]);
    }
  }
}

}  // namespace

SyntheticKv::SyntheticKv(const Model& model, Forward& forward, int64_t sample_tokens, uint64_t seed)
    : model_(model), seed_(seed) {
  const ModelConfig& c = model.config();
  if (sample_tokens < 1) fail("synthetic KV: needs at least one sample token");
  if (c.context_length > 0) sample_tokens = std::min<int64_t>(sample_tokens, c.context_length);
  n_sample_ = sample_tokens;
  freqs_ = c.rope_freqs();

  std::mt19937_64 rng(seed);
  std::vector<int32_t> tokens(static_cast<size_t>(n_sample_));
  for (int32_t& t : tokens) t = static_cast<int32_t>(rng() % static_cast<uint64_t>(c.vocab_size));
  // Full attention in F32, the whole sample in one step.
  KvSettings s;
  s.cache_type = DType::F32;
  s.prefill_chunk = n_sample_;
  const PolicyFactory policies(model, s);
  Sequence seq(model, policies);
  seq.reserve_for(n_sample_);
  EngineStep step(forward);
  StepItem item;
  item.seq = &seq;
  item.tokens = tokens;
  item.logits = ForwardItem::Logits::None;
  step.run(std::span<StepItem>(&item, 1));
  if (item.error) std::rethrow_exception(item.error);
  const KvCache& sample = seq.cache();

  // Undo each key's rotation (by -pos·ω_f) so it can be re-rotated to any position.
  const int d = c.head_dim, H = c.n_kv_heads, rot = c.rotary_dims(), half = rot / 2;
  const size_t per_token = static_cast<size_t>(H) * d;
  pre_k_.resize(static_cast<size_t>(c.n_layers) * n_sample_ * per_token);
  v_.resize(pre_k_.size());
  std::vector<double> cs(half), sn(half);
  for (int l = 0; l < c.n_layers; ++l)
    for (int h = 0; h < H && !c.is_delta(l); ++h) {  // a DeltaNet layer has no KV
      const auto* k = static_cast<const float*>(sample.keys(l, h));
      const auto* v = static_cast<const float*>(sample.values(l, h));
      const int32_t* pos = sample.positions(l, h);
      for (int64_t t = 0; t < n_sample_; ++t) {
        for (int f = 0; f < half; ++f) {
          const double angle = -static_cast<double>(pos[t]) * freqs_[f];
          cs[f] = std::cos(angle);
          sn[f] = std::sin(angle);
        }
        float* dk = &pre_k_[(static_cast<size_t>(l) * n_sample_ + t) * per_token + h * d];
        rotate(k + t * d, dk, 1, d, rot, cs.data(), sn.data());
        std::memcpy(&v_[(static_cast<size_t>(l) * n_sample_ + t) * per_token + h * d], v + t * d,
                    sizeof(float) * d);
      }
    }
}

void SyntheticKv::fill(Sequence& seq, int64_t depth, ThreadPool* pool) {
  const ModelConfig& c = model_.config();
  const int d = c.head_dim, H = c.n_kv_heads, rot = c.rotary_dims(), half = rot / 2;
  const size_t per_token = static_cast<size_t>(H) * d;
  KvCache& cache = seq.cache();
  std::mt19937_64 rng(seed_ ^ 0x5eed5eedULL);
  std::vector<double> cs(half), sn(half);
  std::vector<float> k(per_token);
  while (cache.n_processed() < depth) {
    const int64_t p0 = cache.n_processed();
    const int64_t n = std::min(seq.max_step(), depth - p0);
    seq.prepare_append(n, pool);
    for (int64_t p = p0; p < p0 + n; ++p) {
      for (int f = 0; f < half; ++f) {
        const double angle = static_cast<double>(p) * freqs_[f];
        cs[f] = std::cos(angle);
        sn[f] = std::sin(angle);
      }
      const int64_t j = static_cast<int64_t>(rng() % static_cast<uint64_t>(n_sample_));
      for (int l = 0; l < c.n_layers; ++l) {
        if (c.is_delta(l)) continue;
        const size_t at = (static_cast<size_t>(l) * n_sample_ + j) * per_token;
        rotate(&pre_k_[at], k.data(), H, d, rot, cs.data(), sn.data());
        cache.append(l, static_cast<int32_t>(p), k.data(), &v_[at]);
      }
    }
    cache.advance(n);
  }
  seq.update_stats();
}

}  // namespace triattn::cli
