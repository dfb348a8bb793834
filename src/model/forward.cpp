#include "model/forward.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "ops/attention.h"
#include "ops/ops.h"

namespace triattn {

namespace {

void add_bias(float* y, const TensorView& b, int64_t n_tokens, int64_t n) {
  if (b.empty()) return;
  const auto* bias = static_cast<const float*>(b.data);
  for (int64_t t = 0; t < n_tokens; ++t)
    for (int64_t i = 0; i < n; ++i) y[t * n + i] += bias[i];
}

void head_norm(float* x, const TensorView& w, int64_t n_vectors, int head_dim, float eps) {
  if (w.empty()) return;
  for (int64_t i = 0; i < n_vectors; ++i)
    ops::rmsnorm(x + i * head_dim, static_cast<const float*>(w.data), x + i * head_dim, head_dim, eps);
}

// Gemma's post-attention / post-FFN norm of a block output, in place; nothing when absent.
void post_norm(float* y, const TensorView& w, int64_t n_tokens, int64_t n, float eps) {
  if (w.empty()) return;
  for (int64_t t = 0; t < n_tokens; ++t) ops::rmsnorm(y + t * n, static_cast<const float*>(w.data), y + t * n, n, eps);
}

// Charges the time since the last mark to a phase; nothing when no phases are asked for.
class PhaseClock {
 public:
  explicit PhaseClock(ForwardPhases* p) : p_(p), last_(p ? Clock::now() : Clock::time_point{}) {}
  void mark(ForwardPhases::Phase phase) {
    if (!p_) return;
    const Clock::time_point now = Clock::now();
    p_->seconds[phase] += std::chrono::duration<double>(now - last_).count();
    last_ = now;
  }

 private:
  using Clock = std::chrono::steady_clock;
  ForwardPhases* p_;
  Clock::time_point last_;
};

}  // namespace

const char* ForwardPhases::name(int phase) {
  static const char* const kNames[kCount] = {"qkv", "attention", "output", "ffn in", "ffn down", "logits", "other"};
  return phase >= 0 && phase < kCount ? kNames[phase] : "?";
}

Forward::Forward(const Model& model, ThreadPool* pool) : model_(model), pool_(pool) {}

void Forward::run(std::span<const ForwardItem> items, std::vector<std::vector<float>>& logits,
                  ForwardObserver* observer) {
  const ModelConfig& c = model_.config();
  const ModelWeights& w = model_.weights();
  const int64_t E = c.n_embd, F = c.n_ff, V = c.vocab_size, d = c.head_dim;
  const int64_t Q = c.n_heads * d, K = c.n_kv_heads * d;
  const int group = c.n_heads / c.n_kv_heads;
  const int half = static_cast<int>(d / 2);
  PhaseClock clock(phases_);

  // Flatten the batch: token t belongs to item owner[t] at absolute position pos[t].
  int64_t T = 0;
  for (const ForwardItem& it : items) {
    if (!it.cache) fail("forward: item without a KV cache");
    const KvCacheShape& s = it.cache->shape();
    if (s.n_layers != c.n_layers || s.n_kv_heads != c.n_kv_heads || s.head_dim != d)
      fail("forward: KV cache shape does not match the model");
    T += static_cast<int64_t>(it.tokens.size());
  }
  logits.assign(items.size(), {});
  if (T == 0) return;
  std::vector<int32_t> tok(T), pos(T), owner(T);
  {
    int64_t t = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      const int64_t p0 = items[i].cache->n_processed();
      for (size_t j = 0; j < items[i].tokens.size(); ++j, ++t) {
        tok[t] = items[i].tokens[j];
        if (tok[t] < 0 || tok[t] >= V) fail("forward: token id ", tok[t], " outside the vocabulary (", V, ")");
        pos[t] = static_cast<int32_t>(p0 + static_cast<int64_t>(j));
        owner[t] = static_cast<int32_t>(i);
      }
    }
  }

  x_.resize(T * E);
  xn_.resize(T * std::max(E, Q));
  q_.resize(T * Q);
  k_.resize(T * K);
  v_.resize(T * K);
  att_.resize(T * Q);
  gate_.resize(T * F);
  up_.resize(T * F);
  tmp_.resize(T * E);

  // RoPE tables: one for the full-attention layers and, where sliding layers have their own
  // base (Gemma 3), one for those.
  auto rope_table = [&](const std::vector<float>& freqs, std::vector<float>& cs, std::vector<float>& sn) {
    cs.resize(T * half);
    sn.resize(T * half);
    for (int64_t t = 0; t < T; ++t)
      for (int f = 0; f < half; ++f) {
        const double angle = static_cast<double>(pos[t]) * freqs[f];
        cs[t * half + f] = static_cast<float>(std::cos(angle));
        sn[t * half + f] = static_cast<float>(std::sin(angle));
      }
  };
  rope_table(c.rope_freqs(), cos_, sin_);
  const bool local_rope = c.has_sliding_layers() && c.rope_theta_local > 0;
  if (local_rope) {
    int first_sliding = 0;
    while (!c.is_sliding(first_sliding)) ++first_sliding;
    rope_table(c.rope_freqs(first_sliding), cos_local_, sin_local_);
  }
  for (int64_t t = 0; t < T; ++t) ops::dequantize_matrix_row(w.tok_embd, tok[t], &x_[t * E]);
  if (c.embed_scale) {
    const float normalizer = std::sqrt(static_cast<float>(E));
    for (int64_t i = 0; i < T * E; ++i) x_[i] *= normalizer;
  }

  const float mscale = c.rope_attn_factor();
  const float scale = c.query_scale > 0 ? mscale * mscale * c.query_scale
                                        : mscale * mscale / std::sqrt(static_cast<float>(d));

  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& L = w.layers[l];
    const LayerConfig lc = c.layer(l);
    const bool sliding = lc.attention == AttentionKind::Sliding;
    const float* cos_l = sliding && local_rope ? cos_local_.data() : cos_.data();
    const float* sin_l = sliding && local_rope ? sin_local_.data() : sin_.data();
    for (int64_t t = 0; t < T; ++t)
      ops::rmsnorm(&x_[t * E], static_cast<const float*>(L.attn_norm.data), &xn_[t * E], E, c.rms_eps);
    // Q, K and V (and below gate and up) in one parallel call each: one quantization of
    // the input and one synchronisation of the threads instead of three.
    const ops::MatmulTarget qkv[] = {{&L.wq, q_.data()}, {&L.wk, k_.data()}, {&L.wv, v_.data()}};
    clock.mark(ForwardPhases::kOther);
    ops::matmul_group(qkv, xn_.data(), T, pool_);
    clock.mark(ForwardPhases::kQkv);
    add_bias(q_.data(), L.bq, T, Q);
    add_bias(k_.data(), L.bk, T, K);
    add_bias(v_.data(), L.bv, T, K);
    head_norm(q_.data(), L.q_norm, T * c.n_heads, static_cast<int>(d), c.rms_eps);
    head_norm(k_.data(), L.k_norm, T * c.n_kv_heads, static_cast<int>(d), c.rms_eps);

    if (observer) {
      int64_t t0 = 0;
      for (const ForwardItem& it : items) {
        const int64_t n = static_cast<int64_t>(it.tokens.size());
        if (n) observer->on_pre_rope(l, pos[t0], n, &q_[t0 * Q], &k_[t0 * K]);
        t0 += n;
      }
    }
    for (int64_t t = 0; t < T; ++t) {
      ops::rope(&q_[t * Q], c.n_heads, static_cast<int>(d), cos_l + t * half, sin_l + t * half);
      ops::rope(&k_[t * K], c.n_kv_heads, static_cast<int>(d), cos_l + t * half, sin_l + t * half);
      items[owner[t]].cache->append(l, pos[t], &k_[t * K], &v_[t * K]);
    }

    clock.mark(ForwardPhases::kOther);

    // Attention. One call per (sequence, KV head, run of consecutive tokens): the query
    // heads of the KV head's group for those tokens all read the stream together, so its
    // keys and values come from memory once per call instead of once per query head.
    auto stream = [&](int64_t t, int kvh, const float* query_sinks) {
      const KvCache& cache = *items[owner[t]].cache;
      return AttentionStream{cache.shape().type, cache.keys(l, kvh), cache.values(l, kvh),
                             cache.positions(l, kvh), cache.size(l, kvh), static_cast<int>(d),
                             sliding ? lc.window : 0, c.attn_softcap, query_sinks,
                             cache.max_position(l, kvh), group <= 2 ? 2 : 1};
    };
    const auto* sinks = static_cast<const float*>(L.sinks.data);  // gpt-oss: per query head
    // The queries (and outputs, positions, sinks) of KV head kvh's group for tokens [t0, t1)
    // of one sequence, in this thread's lists.
    struct Group {
      std::vector<const float*> qs;
      std::vector<float*> outs;
      std::vector<int32_t> qpos;
      std::vector<float> qsink;
      int n() const { return static_cast<int>(qs.size()); }
    };
    auto gather = [&](int64_t t0, int64_t t1, int kvh) -> const Group& {
      thread_local Group g;
      g.qs.clear();
      g.outs.clear();
      g.qpos.clear();
      g.qsink.clear();
      for (int64_t t = t0; t < t1; ++t)
        for (int j = 0; j < group; ++j) {
          const int64_t h = static_cast<int64_t>(kvh) * group + j;
          g.qs.push_back(&q_[t * Q + h * d]);
          g.outs.push_back(&att_[t * Q + h * d]);
          g.qpos.push_back(pos[t]);
          if (sinks) g.qsink.push_back(sinks[h]);
        }
      return g;
    };
    auto group_stream = [&](int64_t t0, int kvh, const Group& g) {
      return stream(t0, kvh, sinks ? g.qsink.data() : nullptr);
    };
    // Runs the group of KV head kvh for tokens [t0, t1) of one sequence.
    auto attend_run = [&](int64_t t0, int64_t t1, int kvh, float* weights) {
      const Group& g = gather(t0, t1, kvh);
      attend(g.qs.data(), g.qpos.data(), g.n(), group_stream(t0, kvh, g), scale, g.outs.data(), weights);
    };
    struct Run {
      int64_t t0, t1;
      int kvh;
    };
    // Enough tokens per run that a block of keys serves ~16 queries from L1.
    const int64_t run_tokens = std::max(1, 16 / group);
    std::vector<Run> runs;
    for (int64_t t0 = 0, i = 0; i < static_cast<int64_t>(items.size()); ++i) {
      const int64_t n = static_cast<int64_t>(items[i].tokens.size());
      KvPolicy* pol = items[i].observing_policy;
      const unsigned needs = pol ? pol->needs() : kNeedNothing;
      if (needs == kNeedNothing) {
        for (int64_t a = t0; a < t0 + n; a += run_tokens)
          for (int kvh = 0; kvh < c.n_kv_heads; ++kvh)
            runs.push_back({a, std::min(t0 + n, a + run_tokens), kvh});
      } else {
        // Observed: on this thread, token by token, heads in order, as the policy expects.
        for (int64_t t = t0; t < t0 + n; ++t)
          for (int kvh = 0; kvh < c.n_kv_heads; ++kvh) {
            const int64_t nk = items[i].cache->size(l, kvh);
            const bool want_weights = (needs & kNeedAttention) != 0;
            if (want_weights) weights_.resize(static_cast<size_t>(group * nk));
            attend_run(t, t + 1, kvh, want_weights ? weights_.data() : nullptr);
            for (int g = 0; g < group; ++g) {
              const int h = kvh * group + g;
              if (needs & kNeedQueries) pol->observe_query(l, h, pos[t], &q_[t * Q + h * d]);
              if (want_weights) pol->observe_attention(l, h, weights_.data() + g * nk, nk);
            }
          }
      }
      t0 += n;
    }
    // Decode steps (one token per run) and steps with fewer runs than threads go chunk by
    // chunk (attention.h): the pieces of work are then the chunks of every run's stream, so
    // few runs still use every thread, and the finer pieces balance the threads (8 runs at
    // depth 16384 on 2 threads: 19.7 against 18.9 tok/s, medians of 8 alternating runs).
    // Prefill runs are many already; their chunks' results would take megabytes.
    const int threads = pool_ ? pool_->size() : 1;
    const bool decode = std::all_of(runs.begin(), runs.end(), [](const Run& r) { return r.t1 - r.t0 == 1; });
    if (static_cast<int64_t>(runs.size()) >= threads && !decode) {
      parallel_for_dynamic(
          pool_, static_cast<int64_t>(runs.size()),
          [&](int64_t b, int64_t e, int) {
            for (int64_t r = b; r < e; ++r) attend_run(runs[r].t0, runs[r].t1, runs[r].kvh, nullptr);
          },
          1);
    } else {
      // The chunks' results are merged per run after; attend() goes through the same chunks
      // in turn, so the outputs are the same either way.
      struct Piece {
        int64_t run, chunk;
        size_t at;  // its partial result in partials_
      };
      auto chunks_of = [&](const Run& r) { return attention_chunks(items[owner[r.t0]].cache->size(l, r.kvh)); };
      std::vector<Piece> pieces;
      std::vector<size_t> run_at(runs.size());
      size_t floats = 0;
      for (size_t r = 0; r < runs.size(); ++r) {
        const int n_q = static_cast<int>((runs[r].t1 - runs[r].t0) * group);
        run_at[r] = floats;
        for (int64_t c = 0; c < chunks_of(runs[r]); ++c) {
          pieces.push_back({static_cast<int64_t>(r), c, floats});
          floats += attention_partial_floats(n_q, static_cast<int>(d));
        }
      }
      partials_.resize(floats);
      parallel_for_dynamic(
          pool_, static_cast<int64_t>(pieces.size()),
          [&](int64_t b, int64_t e, int) {
            for (int64_t i = b; i < e; ++i) {
              const Run& r = runs[static_cast<size_t>(pieces[i].run)];
              const Group& g = gather(r.t0, r.t1, r.kvh);
              attend_chunk(g.qs.data(), g.qpos.data(), g.n(), group_stream(r.t0, r.kvh, g), pieces[i].chunk, scale,
                           partials_.data() + pieces[i].at);
            }
          },
          1);
      for (size_t r = 0; r < runs.size(); ++r) {
        const Group& g = gather(runs[r].t0, runs[r].t1, runs[r].kvh);
        merge_attention_chunks(g.n(), static_cast<int>(d), chunks_of(runs[r]), partials_.data() + run_at[r],
                               g.outs.data());
      }
    }

    // A sliding layer keeps only the keys a later query can see: q_pos - k_pos < window for
    // the next position of each sequence.
    if (sliding)
      for (const ForwardItem& it : items)
        if (!it.tokens.empty()) {
          const int64_t next = it.cache->n_processed() + static_cast<int64_t>(it.tokens.size());
          if (next - lc.window + 1 > 0) it.cache->drop_before(l, static_cast<int32_t>(next - lc.window + 1));
        }

    clock.mark(ForwardPhases::kAttention);
    ops::matmul(L.wo, att_.data(), T, tmp_.data(), pool_);
    clock.mark(ForwardPhases::kOutput);
    add_bias(tmp_.data(), L.bo, T, E);
    post_norm(tmp_.data(), L.post_attn_norm, T, E, c.rms_eps);
    for (int64_t i = 0; i < T * E; ++i) x_[i] += tmp_[i];

    for (int64_t t = 0; t < T; ++t)
      ops::rmsnorm(&x_[t * E], static_cast<const float*>(L.ffn_norm.data), &xn_[t * E], E, c.rms_eps);
    clock.mark(ForwardPhases::kOther);
    if (lc.ffn == FfnKind::Moe) {
      moe_.run(c, L, xn_.data(), T, tmp_.data(), pool_);
      clock.mark(ForwardPhases::kFfnIn);
    } else {
      const ops::MatmulTarget gate_up[] = {{&L.w_gate, gate_.data()}, {&L.w_up, up_.data()}};
      ops::matmul_group(gate_up, xn_.data(), T, pool_);
      clock.mark(ForwardPhases::kFfnIn);
      ffn_activation(c, gate_.data(), up_.data(), T * F);
      clock.mark(ForwardPhases::kOther);
      ops::matmul(L.w_down, gate_.data(), T, tmp_.data(), pool_);
      clock.mark(ForwardPhases::kFfnDown);
    }
    post_norm(tmp_.data(), L.post_ffn_norm, T, E, c.rms_eps);
    for (int64_t i = 0; i < T * E; ++i) x_[i] += tmp_[i];
  }

  // Logits only for the rows asked for, batched through the output matrix.
  std::vector<int64_t> rows;
  for (int64_t t = 0, i = 0; i < static_cast<int64_t>(items.size()); ++i) {
    const int64_t n = static_cast<int64_t>(items[i].tokens.size());
    if (items[i].logits == ForwardItem::Logits::All)
      for (int64_t j = 0; j < n; ++j) rows.push_back(t + j);
    else if (items[i].logits == ForwardItem::Logits::Last && n > 0)
      rows.push_back(t + n - 1);
    t += n;
  }
  clock.mark(ForwardPhases::kOther);
  if (!rows.empty()) {
    const int64_t R = static_cast<int64_t>(rows.size());
    std::vector<float> normed(R * E);
    for (int64_t r = 0; r < R; ++r)
      ops::rmsnorm(&x_[rows[r] * E], static_cast<const float*>(w.output_norm.data), &normed[r * E], E, c.rms_eps);
    if (R == 1) {  // decode: straight into the caller's vector, no copy of V floats
      std::vector<float>& dst = logits[owner[rows[0]]];
      dst.resize(static_cast<size_t>(V));
      ops::matmul(w.output, normed.data(), 1, dst.data(), pool_);
      if (c.final_softcap > 0) ops::softcap(dst.data(), V, c.final_softcap);
    } else {
      std::vector<float> out(R * V);
      ops::matmul(w.output, normed.data(), R, out.data(), pool_);
      if (c.final_softcap > 0) ops::softcap(out.data(), R * V, c.final_softcap);
      for (int64_t r = 0; r < R; ++r) {
        std::vector<float>& dst = logits[owner[rows[r]]];
        dst.insert(dst.end(), out.begin() + r * V, out.begin() + (r + 1) * V);
      }
    }
  }
  clock.mark(ForwardPhases::kLogits);
  for (const ForwardItem& it : items) it.cache->advance(static_cast<int64_t>(it.tokens.size()));
  clock.mark(ForwardPhases::kOther);
}

}  // namespace triattn
