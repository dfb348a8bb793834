#pragma once
// TriAttention key scoring (docs/design.md, "Key score"). Per pruning event and query head h the
// position-dependent part collapses to per-band coefficients
//   c_h[f] = fs²·q_mean_h[f]·mean_{δ∈D} e^{iω_f(p+δ)},   w_h[f] = fs²·(q_abs_mean_h[f] − |q_mean_h[f]|)
// and a cached (post-RoPE) key K scores  Σ_f Re(c_h[f]·conj(K_f)) + w_h[f]·|K_f|,
// i.e. one complex dot product plus a weighted norm: no key positions, no trig per key.
// Under partial RoPE the bands are the rotated ones (f < rotary_dim/2) and every key also gets
// the position-free term of its unrotated ("pass") coordinates K_p (docs/design.md, "Partial RoPE"):
//   u_h·K_p + w_p,h·‖K_p‖,   u_h = fs²·E[q_pass,h],   w_p,h = fs²·(E‖q_pass,h‖ − ‖E q_pass,h‖).
#include <cstdint>
#include <span>
#include <vector>

#include "core/dtype.h"
#include "kv/policy.h"
#include "ops/score_kernels.h"  // HeadCoeffs, score_keys

namespace triattn {

// mean_{δ∈D} e^{iω(p+δ)} for D = {1, 2, 4, ..., 2^max_offset_log2}, in double (p can be large).
void offset_phase_mean(double omega, int64_t p, int max_offset_log2, double* re, double* im);

// sqrt(Σ_f w[f]·|K_f|² + pass_w[j]·‖K_p‖²) per key and head j, with the heads' w() = fs⁴·v
// (ScoreTerms::Spread); same layout and arguments as score_keys, except that a row holds
// 2·half + pass_dims coordinates, the last pass_dims unrotated (pass_w: one weight per head;
// ignored when pass_dims is 0). Scalar: it runs once per pruning event.
void score_spread(const HeadCoeffs* heads, int n_heads, const void* keys, DType type, size_t row_bytes,
                  std::span<const int32_t> rows, float* out, int pass_dims = 0, const float* pass_w = nullptr);

// What a scorer computes for each key:
//   Both    S_h, the paper's score (trig term + norm term), as above;
//   Trig    the logit of the mean query alone, Σ_f Re(c_h[f]·conj(K_f)) (+ u_h·K_p);
//   Spread  fs²·sqrt(Σ_f v_h[f]·|K_f|² (+ v_p,h·‖K_p‖²)), v_h[f] = max(0, q_abs_mean_h[f]² − |q_mean_h[f]|²)
//           and v_p,h the same of the pass block (E‖q_pass‖, ‖E q_pass‖): the
//           spread of the logit q·K over queries that deviate from their mean, one standard
//           deviation under independent bands (v_h[f] bounds each band's variance E|q_f|² −
//           |E q_f|² from below, from what a stats file holds). The split policy ranks keys by
//           the trig term and by this one separately (kv/policies/triattention_split.cpp).
enum class ScoreTerms { Both, Trig, Spread };

// All heads of a model at one event.
class TriAttentionScorer {
 public:
  TriAttentionScorer(std::shared_ptr<const HeadStats> stats, const AttentionGeometry& geometry,
                     int max_offset_log2, ScoreTerms terms = ScoreTerms::Both);
  // Recomputes every head's coefficients for an event at p tokens processed.
  void prepare(int64_t p);
  int64_t prepared_p() const { return p_; }
  const HeadCoeffs& coeffs(int layer, int q_head) const { return coeffs_[layer * n_heads_ + q_head]; }
  int pass_dims() const { return pass_; }
  // Raw scores S_h of `rows` of stream (layer, kv_head) for each query head of its group:
  // out[j * rows.size() + i], j = 0..group-1 (query head kv_head*group + j).
  void score_stream(const KvCache& cache, int layer, int kv_head, std::span<const int32_t> rows,
                    float* out) const;
  int group() const { return group_; }

 private:
  std::shared_ptr<const HeadStats> stats_;
  std::vector<double> omega_;
  double fs2_ = 1.0;
  int max_offset_log2_ = 16;
  ScoreTerms terms_ = ScoreTerms::Both;
  void set_pass_coeffs();

  int n_layers_ = 0, n_heads_ = 0, group_ = 1, half_ = 0;
  int pass_ = 0;  // head_dim − rotary_dim: coordinates [2·half_, head_dim) do not rotate
  int64_t p_ = -1;
  std::vector<HeadCoeffs> coeffs_;
  // Per head (layer-major like coeffs_): u_h in pass_u_[hh * pass_ ...], and the pass weight
  // (w_p,h, or v_p,h·fs⁴ for Spread) in pass_w_[hh]. Position-free, so set once.
  std::vector<float> pass_u_, pass_w_;
};

// Slow reference (tests only): the paper's position form from a PRE-RoPE key k (halves layout)
// at position p_k:  mean_δ Σ_f fs²|q̄_f||k_f| cos(ω_f(p − p_k + δ) + arg q̄_f − arg k_f)
//                 + Σ_f fs²(q_abs_mean_f − |q̄_f|)|k_f|, all in double.
double score_position_form(const float* q_mean_re, const float* q_mean_im, const float* q_abs_mean,
                           const float* k_pre, const float* omega, int half, double fs, int64_t p,
                           int64_t p_k, int max_offset_log2);
// The pass part of the same score (partial RoPE, tests only): fs²·(q_pass_mean·k_pass +
// (q_pass_abs_mean − ‖q_pass_mean‖)·‖k_pass‖), in double.
double score_pass_form(const float* q_pass_mean, float q_pass_abs_mean, const float* k_pass, int pass_dims,
                       double fs);

// z-score of each head's scores over the candidates (mean, population std clamped at 1e-6),
// then the max over the heads: out[i] = max_j z_j[i]. scores as laid out by score_keys.
void zscore_group_max(const float* scores, int n_heads, int64_t n, float* out);
// The same z-scores, written in place of each head's scores (no max): the split policy
// combines two terms' z-scores before taking the group's max.
void zscore_rows(float* scores, int n_heads, int64_t n);

}  // namespace triattn
