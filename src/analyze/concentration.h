#pragma once
// How concentrated one head's pre-RoPE vectors are around their mean (docs/design.md, The
// algorithm): per band f the mean resultant length R_f = |E x_f| / E|x_f| (1: every token
// points the same way, 0: no common direction), and three per-head summaries of it. These are
// what decide whether TriAttention's trigonometric term can stand in for the query.
#include <span>
#include <vector>

namespace triattn {

struct BandConcentration {
  std::vector<double> R;     // R_f per band (NaN where E|x_f| = 0)
  double band_mean_R = 0;    // mean_f R_f
  double weighted_R = 0;     // Σ_f |E x_f| / Σ_f E|x_f|: R_f weighted by the band's mean norm
  int top_band = -1;         // the band with the largest E|x_f| (lowest index on ties)
  double top_band_R = 0;     // R_f of that band
};

// From one head's band means (real, imaginary) and mean norms, each one value per band.
BandConcentration band_concentration(std::span<const float> mean_re, std::span<const float> mean_im,
                                     std::span<const float> abs_mean);

// The model's figures over a set of heads: the mean of each summary and the share of heads
// whose weighted R exceeds `threshold` (0.95 in the paper). NaN summaries are left out.
struct ConcentrationSummary {
  int heads = 0;
  double band_mean_R = 0, weighted_R = 0, top_band_R = 0;
  double threshold = 0.95;
  double fraction_above = 0;  // heads with weighted_R > threshold / heads
};
ConcentrationSummary summarize_concentration(std::span<const BandConcentration> heads, double threshold = 0.95);

}  // namespace triattn
