#include "model/forward.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "ops/gated_delta.h"
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

// Gemma 4's V norm: RMSNorm of each head without a weight, in place.
void plain_head_norm(float* x, int64_t n_vectors, int head_dim, float eps) {
  for (int64_t i = 0; i < n_vectors; ++i) {
    float* v = x + i * head_dim;
    double ss = 0;
    for (int j = 0; j < head_dim; ++j) ss += static_cast<double>(v[j]) * v[j];
    const float inv = static_cast<float>(1.0 / std::sqrt(ss / head_dim + eps));
    for (int j = 0; j < head_dim; ++j) v[j] *= inv;
  }
}

// Gemma's post-attention / post-FFN norm of a block output, in place; nothing when absent.
void post_norm(float* y, const TensorView& w, int64_t n_tokens, int64_t n, float eps) {
  if (w.empty()) return;
  for (int64_t t = 0; t < n_tokens; ++t) ops::rmsnorm(y + t * n, static_cast<const float*>(w.data), y + t * n, n, eps);
}

}  // namespace

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


const char* ForwardPhases::name(int phase) {
  static const char* const kNames[kCount] = {"qkv", "attention", "output", "ffn in", "ffn down", "logits", "other"};
  return phase >= 0 && phase < kCount ? kNames[phase] : "?";
}

Forward::Forward(const Model& model, ThreadPool* pool) : model_(model), pool_(pool) {}

void Forward::run(std::span<const ForwardItem> items, std::vector<std::vector<float>>& logits) {
  const ModelConfig& c = model_.config();
  const ModelWeights& w = model_.weights();
  const int64_t E = c.n_embd;
  PhaseClock clock(phases_);
  logits.assign(items.size(), {});
  const int64_t T = flatten(items);
  if (T == 0) return;
  embed();
  rope_tables();
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& L = w.layers[l];
    for (int64_t t = 0; t < T; ++t)
      ops::rmsnorm(&x_[t * E], static_cast<const float*>(L.attn_norm.data), &xn_[t * E], E, c.rms_eps);
    if (c.is_delta(l))
      delta_block(l, items, clock);
    else
      attention_block(l, items, clock);
    for (int64_t i = 0; i < T * E; ++i) x_[i] += tmp_[i];
    for (int64_t t = 0; t < T; ++t)
      ops::rmsnorm(&x_[t * E], static_cast<const float*>(L.ffn_norm.data), &xn_[t * E], E, c.rms_eps);
    ffn_block(l, clock);
    for (int64_t i = 0; i < T * E; ++i) x_[i] += tmp_[i];
    if (!L.layer_scale.empty()) {  // Gemma 4: the layer's output scaled as a whole
      const float scale = *static_cast<const float*>(L.layer_scale.data);
      for (int64_t i = 0; i < T * E; ++i) x_[i] *= scale;
    }
  }
  clock.mark(ForwardPhases::kOther);
  output_logits(items, logits);
  clock.mark(ForwardPhases::kLogits);
  for (const ForwardItem& it : items) it.cache->advance(static_cast<int64_t>(it.tokens.size()));
  clock.mark(ForwardPhases::kOther);
}

int64_t Forward::flatten(std::span<const ForwardItem> items) {
  const ModelConfig& c = model_.config();
  int64_t T = 0;
  for (const ForwardItem& it : items) {
    if (!it.cache) fail("forward: item without a KV cache");
    const KvCacheShape& s = it.cache->shape();
    bool layers_match = s.n_layers == c.n_layers && s.n_kv_heads == c.max_kv_heads() && s.head_dim == c.head_dim;
    for (int l = 0; layers_match && l < c.n_layers; ++l)
      layers_match = s.kv_heads(l) == c.layer_kv_heads(l) && s.dim(l) == c.layer_head_dim(l);
    if (!layers_match) fail("forward: KV cache shape does not match the model");
    T += static_cast<int64_t>(it.tokens.size());
  }
  T_ = T;
  tok_.resize(T);
  pos_.resize(T);
  owner_.resize(T);
  item_first_.assign(items.size() + 1, 0);
  for (size_t i = 0; i < items.size(); ++i)
    item_first_[i + 1] = item_first_[i] + static_cast<int64_t>(items[i].tokens.size());
  for (int64_t t = 0, i = 0; i < static_cast<int64_t>(items.size()); ++i) {
    const int64_t p0 = items[i].cache->n_processed();
    for (size_t j = 0; j < items[i].tokens.size(); ++j, ++t) {
      tok_[t] = items[i].tokens[j];
      if (tok_[t] < 0 || tok_[t] >= c.vocab_size)
        fail("forward: token id ", tok_[t], " outside the vocabulary (", c.vocab_size, ")");
      pos_[t] = static_cast<int32_t>(p0 + static_cast<int64_t>(j));
      owner_[t] = static_cast<int32_t>(i);
    }
  }
  // Scratch for the largest layer (Gemma 4's sliding and full layers differ in size).
  const int64_t E = c.n_embd, F = c.n_ff, Q = static_cast<int64_t>(c.n_heads) * c.max_head_dim(),
                K = static_cast<int64_t>(c.max_kv_heads()) * c.max_head_dim();
  x_.resize(T * E);
  xn_.resize(T * std::max(E, Q));
  q_.resize(T * Q);
  if (c.attn_output_gate) qg_.resize(T * 2 * Q), out_gate_.resize(T * Q);
  if (c.has_delta_layers()) {
    const DeltaNetConfig& d = c.delta;
    dn_qkv_.resize(T * d.conv_dim());
    dn_conv_.resize(T * d.conv_dim());
    dn_z_.resize(T * d.value_dim());
    dn_out_.resize(T * d.value_dim());
    dn_beta_.resize(T * d.n_v_heads);
    dn_g_.resize(T * d.n_v_heads);
  }
  k_.resize(T * K);
  v_.resize(T * K);
  att_.resize(T * Q);
  gate_.resize(T * F);
  up_.resize(T * F);
  tmp_.resize(T * E);
  return T;
}

void Forward::embed() {
  const ModelConfig& c = model_.config();
  const int64_t E = c.n_embd;
  for (int64_t t = 0; t < T_; ++t) ops::dequantize_matrix_row(model_.weights().tok_embd, tok_[t], &x_[t * E]);
  if (c.embed_scale) {
    const float normalizer = std::sqrt(static_cast<float>(E));
    for (int64_t i = 0; i < T_ * E; ++i) x_[i] *= normalizer;
  }
}

// One table for the full-attention layers and, where sliding layers have their own base
// (Gemma 3), one for those.
void Forward::rope_tables() {
  const ModelConfig& c = model_.config();
  auto table = [&](const std::vector<float>& freqs, std::vector<float>& cs, std::vector<float>& sn) {
    const int64_t half = static_cast<int64_t>(freqs.size());
    cs.resize(T_ * half);
    sn.resize(T_ * half);
    for (int64_t t = 0; t < T_; ++t)
      for (int f = 0; f < half; ++f) {
        const double angle = static_cast<double>(pos_[t]) * freqs[f];
        cs[t * half + f] = static_cast<float>(std::cos(angle));
        sn[t * half + f] = static_cast<float>(std::sin(angle));
      }
  };
  table(c.rope_freqs(), cos_, sin_);
  if (c.has_sliding_layers() && c.rope_theta_local > 0) {
    int first_sliding = 0;
    while (!c.is_sliding(first_sliding)) ++first_sliding;
    table(c.rope_freqs(first_sliding), cos_local_, sin_local_);
  }
}

// Attention of layer l on xn_ (the normed input) into tmp_: Q/K/V, the observers' pre-RoPE
// view, RoPE, the KV append, attention, the output projection.
void Forward::attention_block(int l, std::span<const ForwardItem> items, PhaseClock& clock) {
  const ModelConfig& c = model_.config();
  const LayerWeights& L = model_.weights().layers[l];
  const LayerConfig lc = c.layer(l);
  const int kv_heads = c.layer_kv_heads(l);
  const int64_t T = T_, E = c.n_embd, d = c.layer_head_dim(l), Q = c.n_heads * d, K = kv_heads * d;
  const int rotary = c.layer_rotary_dims(l), half = rotary / 2;
  const bool sliding = lc.attention == AttentionKind::Sliding;
  const bool local_rope = sliding && c.rope_theta_local > 0;
  const float* cos_l = local_rope ? cos_local_.data() : cos_.data();
  const float* sin_l = local_rope ? sin_local_.data() : sin_.data();

  // Q, K and V in one parallel call: one quantization of the input and one synchronisation
  // of the threads instead of three.
  // A layer whose V is its K projection (Gemma 4's K=V) multiplies by two matrices only.
  const bool v_from_k = c.v_from_k(l);
  const ops::MatmulTarget qkv[] = {{&L.wq, c.attn_output_gate ? qg_.data() : q_.data()}, {&L.wk, k_.data()},
                                   {&L.wv, v_.data()}};
  clock.mark(ForwardPhases::kOther);
  ops::matmul_group(std::span(qkv, v_from_k ? 2 : 3), xn_.data(), T, pool_);
  clock.mark(ForwardPhases::kQkv);
  if (c.attn_output_gate) split_query_gate(T);
  add_bias(q_.data(), L.bq, T, Q);
  add_bias(k_.data(), L.bk, T, K);
  add_bias(v_.data(), L.bv, T, K);
  if (v_from_k) std::memcpy(v_.data(), k_.data(), sizeof(float) * static_cast<size_t>(T * K));  // raw, before k_norm
  head_norm(q_.data(), L.q_norm, T * c.n_heads, static_cast<int>(d), c.rms_eps);
  head_norm(k_.data(), L.k_norm, T * kv_heads, static_cast<int>(d), c.rms_eps);
  if (c.v_norm) plain_head_norm(v_.data(), T * kv_heads, static_cast<int>(d), c.rms_eps);
  for (int64_t t0 = 0, i = 0; i < static_cast<int64_t>(items.size()); ++i) {
    const int64_t n = static_cast<int64_t>(items[i].tokens.size());
    if (n && items[i].observer) items[i].observer->on_pre_rope(l, pos_[t0], n, &q_[t0 * Q], &k_[t0 * K]);
    t0 += n;
  }
  for (int64_t t = 0; t < T; ++t) {
    if (rotary == d) {
      ops::rope(&q_[t * Q], c.n_heads, static_cast<int>(d), cos_l + t * half, sin_l + t * half);
      ops::rope(&k_[t * K], kv_heads, static_cast<int>(d), cos_l + t * half, sin_l + t * half);
    } else {  // partial RoPE: the first `rotary` coordinates of each head, as a head of that size
      for (int h = 0; h < c.n_heads; ++h) ops::rope(&q_[t * Q + h * d], 1, rotary, cos_l + t * half, sin_l + t * half);
      for (int h = 0; h < kv_heads; ++h)
        ops::rope(&k_[t * K + h * d], 1, rotary, cos_l + t * half, sin_l + t * half);
    }
    items[owner_[t]].cache->append(l, pos_[t], &k_[t * K], &v_[t * K]);
  }
  clock.mark(ForwardPhases::kOther);

  AttentionLayer a;
  a.layer = l;
  a.n_heads = c.n_heads;
  a.n_kv_heads = kv_heads;
  a.head_dim = static_cast<int>(d);
  a.window = sliding ? lc.window : 0;
  a.softcap = c.attn_softcap;
  a.sinks = static_cast<const float*>(L.sinks.data);
  const float mscale = c.rope_attn_factor();
  a.scale = c.query_scale > 0 ? mscale * mscale * c.query_scale : mscale * mscale / std::sqrt(static_cast<float>(d));
  attention_.run(a, AttentionTokens{items, owner_.data(), pos_.data()}, q_.data(), att_.data(), pool_);
  // A sliding layer keeps only the keys a later query can see: q_pos - k_pos < window for
  // the next position of each sequence.
  if (sliding)
    for (const ForwardItem& it : items)
      if (!it.tokens.empty()) {
        const int64_t next = it.cache->n_processed() + static_cast<int64_t>(it.tokens.size());
        if (next - lc.window + 1 > 0) it.cache->drop_before(l, static_cast<int32_t>(next - lc.window + 1));
      }
  if (c.attn_output_gate)
    for (int64_t i = 0; i < T * Q; ++i) att_[i] /= 1.0f + std::exp(-out_gate_[i]);
  clock.mark(ForwardPhases::kAttention);

  ops::matmul(L.wo, att_.data(), T, tmp_.data(), pool_);
  clock.mark(ForwardPhases::kOutput);
  add_bias(tmp_.data(), L.bo, T, E);
  post_norm(tmp_.data(), L.post_attn_norm, T, E, c.rms_eps);
}

// Qwen3.5's q_proj output holds, per head, head_dim query values then head_dim gate values.
void Forward::split_query_gate(int64_t T) {
  const ModelConfig& c = model_.config();
  const int64_t d = c.head_dim, Q = c.n_heads * d;
  for (int64_t t = 0; t < T; ++t)
    for (int h = 0; h < c.n_heads; ++h) {
      const float* src = &qg_[t * 2 * Q + h * 2 * d];
      std::memcpy(&q_[t * Q + h * d], src, sizeof(float) * static_cast<size_t>(d));
      std::memcpy(&out_gate_[t * Q + h * d], src + d, sizeof(float) * static_cast<size_t>(d));
    }
}

// A Gated DeltaNet layer on xn_ into tmp_: the input projections, then per sequence the causal
// conv and the delta rule from its recurrent state (kept in its cache, KvCache::state), the
// gated norm per value head, the output projection.
void Forward::delta_block(int l, std::span<const ForwardItem> items, PhaseClock& clock) {
  const ModelConfig& c = model_.config();
  const LayerWeights& L = model_.weights().layers[l];
  const DeltaNetConfig& d = c.delta;
  const int64_t T = T_, C = d.conv_dim(), H = d.n_v_heads, dv = d.head_v_dim;
  const ops::MatmulTarget in[] = {
      {&L.dn_qkv, dn_qkv_.data()}, {&L.dn_z, dn_z_.data()}, {&L.dn_beta, dn_beta_.data()}, {&L.dn_alpha, dn_g_.data()}};
  clock.mark(ForwardPhases::kOther);
  ops::matmul_group(in, xn_.data(), T, pool_);
  clock.mark(ForwardPhases::kQkv);
  const auto* dt_bias = static_cast<const float*>(L.dn_dt_bias.data);
  const auto* a = static_cast<const float*>(L.dn_a.data);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      dn_beta_[t * H + h] = ops::delta_beta(dn_beta_[t * H + h]);
      dn_g_[t * H + h] = ops::delta_decay(dn_g_[t * H + h], dt_bias[h], a[h]);
    }
  const std::vector<int64_t>& first = item_first_;
  const int64_t conv_floats = d.conv_state_floats();
  parallel_for_dynamic(pool_, static_cast<int64_t>(items.size()), [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t n = first[i + 1] - first[i];
      if (n == 0) continue;
      ops::causal_conv1d_silu(n, static_cast<int>(C), d.conv_kernel, &dn_qkv_[first[i] * C], C,
                              static_cast<const float*>(L.dn_conv.data), items[i].cache->state(l), &dn_conv_[first[i] * C],
                              C);
    }
  });
  // One unit of work per (sequence, value head): each head's state is its own.
  parallel_for_dynamic(pool_, static_cast<int64_t>(items.size()) * H, [&](int64_t b, int64_t e, int) {
    for (int64_t u = b; u < e; ++u) {
      const int64_t i = u / H, h = u % H, t0 = first[i], n = first[i + 1] - t0;
      if (n == 0) continue;
      float* state = items[i].cache->state(l) + conv_floats;
      ops::gated_delta_rule(d, n, &dn_conv_[t0 * C], C, &dn_g_[t0 * H], &dn_beta_[t0 * H], H, state,
                            &dn_out_[t0 * H * dv], H * dv, static_cast<int>(h), static_cast<int>(h) + 1);
      for (int64_t t = t0; t < t0 + n; ++t) {
        float* y = &dn_out_[(t * H + h) * dv];
        ops::gated_rmsnorm(y, &dn_z_[(t * H + h) * dv], static_cast<const float*>(L.dn_norm.data),
                           static_cast<int>(dv), c.rms_eps, y);
      }
    }
  });
  clock.mark(ForwardPhases::kAttention);
  ops::matmul(L.dn_out, dn_out_.data(), T, tmp_.data(), pool_);
  clock.mark(ForwardPhases::kOutput);
}

// The FFN of layer l (dense or MoE) on xn_ into tmp_.
void Forward::ffn_block(int l, PhaseClock& clock) {
  const ModelConfig& c = model_.config();
  const LayerWeights& L = model_.weights().layers[l];
  const int64_t T = T_;
  clock.mark(ForwardPhases::kOther);
  if (c.layer(l).ffn == FfnKind::Moe) {
    moe_.run(c, L, xn_.data(), T, tmp_.data(), pool_);
    clock.mark(ForwardPhases::kFfnIn);
  } else {
    const ops::MatmulTarget gate_up[] = {{&L.w_gate, gate_.data()}, {&L.w_up, up_.data()}};
    ops::matmul_group(gate_up, xn_.data(), T, pool_);
    clock.mark(ForwardPhases::kFfnIn);
    ffn_activation(c, gate_.data(), up_.data(), T, c.n_ff);
    clock.mark(ForwardPhases::kOther);
    ops::matmul(L.w_down, gate_.data(), T, tmp_.data(), pool_);
    clock.mark(ForwardPhases::kFfnDown);
  }
  post_norm(tmp_.data(), L.post_ffn_norm, T, c.n_embd, c.rms_eps);
}

// Logits only for the rows asked for, batched through the output matrix.
void Forward::output_logits(std::span<const ForwardItem> items, std::vector<std::vector<float>>& logits) {
  const ModelConfig& c = model_.config();
  const ModelWeights& w = model_.weights();
  const int64_t E = c.n_embd, V = c.vocab_size;
  std::vector<int64_t> rows;
  for (int64_t t = 0, i = 0; i < static_cast<int64_t>(items.size()); ++i) {
    const int64_t n = static_cast<int64_t>(items[i].tokens.size());
    if (items[i].logits == ForwardItem::Logits::All)
      for (int64_t j = 0; j < n; ++j) rows.push_back(t + j);
    else if (items[i].logits == ForwardItem::Logits::Last && n > 0)
      rows.push_back(t + n - 1);
    t += n;
  }
  if (rows.empty()) return;
  const int64_t R = static_cast<int64_t>(rows.size());
  std::vector<float> normed(R * E);
  for (int64_t r = 0; r < R; ++r)
    ops::rmsnorm(&x_[rows[r] * E], static_cast<const float*>(w.output_norm.data), &normed[r * E], E, c.rms_eps);
  if (R == 1) {  // decode: straight into the caller's vector, no copy of V floats
    std::vector<float>& dst = logits[owner_[rows[0]]];
    dst.resize(static_cast<size_t>(V));
    ops::matmul(w.output, normed.data(), 1, dst.data(), pool_);
    if (c.final_softcap > 0) ops::softcap(dst.data(), V, c.final_softcap);
    return;
  }
  std::vector<float> out(R * V);
  ops::matmul(w.output, normed.data(), R, out.data(), pool_);
  if (c.final_softcap > 0) ops::softcap(out.data(), R * V, c.final_softcap);
  for (int64_t r = 0; r < R; ++r) {
    std::vector<float>& dst = logits[owner_[rows[r]]];
    dst.insert(dst.end(), out.begin() + r * V, out.begin() + (r + 1) * V);
  }
}

}  // namespace triattn
