#pragma once
// The pre-RoPE queries and keys of every token, kept for the analyses that need the vectors
// themselves rather than their means (reconstruction correlation, distance curves, scatter
// plots). A forward observer: it is handed to the calibration loop (CalibrateOptions::
// also_observe), so analysis and statistics come from one pass over the input.
// Memory: tokens x layers x (n_heads + n_kv_heads) x head_dim floats.
#include <complex>
#include <cstdint>
#include <vector>

#include "model/observer.h"

namespace triattn {

// A run of consecutive tokens on one fresh KV cache: positions 0..length-1.
struct CaptureWindow {
  int64_t start = 0;   // index of its first token in the capture
  int64_t length = 0;
};

class QkCapture final : public ForwardObserver {
 public:
  // rotary_dim: the leading coordinates RoPE rotates (0 = head_dim); only they form bands.
  // observed_layers: the layers the forward pass reports (those with KV; empty = every layer);
  // the others (DeltaNet) stay empty.
  QkCapture(int n_layers, int n_heads, int n_kv_heads, int head_dim, int rotary_dim = 0,
            std::vector<int> observed_layers = {});

  // The first observed layer of each call appends tokens; the others must then report the same run.
  // A call with pos0 = 0 starts a new window; otherwise pos0 must continue the current one.
  void on_pre_rope(int layer, int64_t pos0, int64_t n_tokens, const float* q, const float* k) override;

  int n_layers() const { return n_layers_; }
  int n_heads() const { return n_heads_; }
  int n_kv_heads() const { return n_kv_heads_; }
  int head_dim() const { return head_dim_; }
  int rotary_dim() const { return half_ * 2; }
  int bands() const { return half_; }
  bool observed(int layer) const { return observed_[layer]; }
  // Tokens every observed layer has reported (throws if the layers disagree: a partial pass).
  int64_t tokens() const;
  const std::vector<CaptureWindow>& windows() const { return windows_; }
  // Position of a token inside its window (what RoPE rotated it by).
  int64_t position(int64_t token) const { return positions_[token]; }

  // Band f of query head `head` / KV head `kv_head` at `token` (halves layout of the rotated part).
  std::complex<double> q_band(int layer, int64_t token, int head, int f) const {
    const float* x = &q_[layer][(token * n_heads_ + head) * head_dim_];
    return {x[f], x[f + half_]};
  }
  std::complex<double> k_band(int layer, int64_t token, int kv_head, int f) const {
    const float* x = &k_[layer][(token * n_kv_heads_ + kv_head) * head_dim_];
    return {x[f], x[f + half_]};
  }

 private:
  int n_layers_, n_heads_, n_kv_heads_, head_dim_, half_;
  std::vector<bool> observed_;
  int first_ = 0;  // the first observed layer: it defines the token run
  std::vector<std::vector<float>> q_, k_;  // per layer: [tokens][heads][head_dim]
  std::vector<int64_t> layer_tokens_;      // tokens reported per layer
  std::vector<int64_t> positions_;         // per token, from layer 0
  std::vector<CaptureWindow> windows_;
};

}  // namespace triattn
