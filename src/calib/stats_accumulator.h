#pragma once
// Calibration statistics (docs/design.md, The algorithm): a forward observer that sums, per band,
// the complex pre-RoPE query q_f and its modulus |q_f| for every (layer, query head), and the
// same for keys per KV head. Under partial RoPE the bands are the rotated ones and the query's
// unrotated coordinates are summed too (their mean and the mean of their norm). Sums are in
// double so long calibration texts lose nothing.
#include <cstdint>
#include <vector>

#include "kv/policy.h"
#include "model/observer.h"

namespace triattn {

class StatsAccumulator final : public ForwardObserver {
 public:
  // rotary_dim: coordinates that rotate (0 = head_dim). observed_layers: the layers the forward
  // pass reports (those with a KV cache; empty = every layer); the others stay zero.
  StatsAccumulator(int n_layers, int n_heads, int n_kv_heads, int head_dim, int rotary_dim = 0,
                   std::vector<int> observed_layers = {});

  void on_pre_rope(int layer, int64_t pos0, int64_t n_tokens, const float* q, const float* k) override;

  // Tokens every observed layer has seen (throws if they disagree: a partial forward pass).
  int64_t tokens() const;
  // Means over the tokens seen. Throws when no token was seen.
  HeadStats result() const;

 private:
  struct Sums {
    std::vector<double> re, im, abs;  // [n_layers][n_heads][half]
  };
  static void add(Sums& s, size_t base, const float* x, int half);

  int n_layers_, n_heads_, n_kv_heads_, head_dim_, rotary_dim_, half_, pass_;
  Sums q_, k_;
  std::vector<double> q_pass_, q_pass_abs_;  // [n_layers][n_heads][pass_], [n_layers][n_heads]
  std::vector<int> observed_;
  std::vector<int64_t> layer_tokens_;
};

}  // namespace triattn
