#pragma once
// Which frequency bands carry a query head's attention logits: band f contributes
// at most E|q_f|·E|k_f| to q·k, so ranking the bands by that product says which few bands
// TriAttention's score really rests on, and how much of the score is the norm term.
#include <span>
#include <vector>

namespace triattn {

struct DominantBands {
  std::vector<int> ranked;            // bands, largest E|q_f|·E|k_f| first (lower band first on ties)
  std::vector<double> contribution;   // E|q_f|·E|k_f| in ranked order
  int top_k = 0;                      // min(3, bands)
  double top1_share = 0;              // contribution of the top band / Σ_f contribution
  double topk_share = 0;              // of the top_k bands / Σ_f contribution
  // Σ_f (E|q_f| − |E q_f|)·E|k_f| / Σ_f E|q_f|·E|k_f|: the part of the score's scale that the
  // norm term carries (0: a perfectly concentrated query, all trigonometric; 1: no centre).
  double norm_term_share = 0;
};

// q: the query head's band means and mean norms; k_abs_mean: its KV head's mean key norms.
DominantBands dominant_bands(std::span<const float> q_mean_re, std::span<const float> q_mean_im,
                             std::span<const float> q_abs_mean, std::span<const float> k_abs_mean);

inline constexpr int kDominantTopK = 3;

}  // namespace triattn
