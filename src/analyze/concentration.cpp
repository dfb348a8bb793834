#include "analyze/concentration.h"

#include <cmath>
#include <limits>

#include "core/error.h"

namespace triattn {

BandConcentration band_concentration(std::span<const float> mean_re, std::span<const float> mean_im,
                                     std::span<const float> abs_mean) {
  const size_t n = abs_mean.size();
  if (mean_re.size() != n || mean_im.size() != n || n == 0)
    fail("analyze: band statistics of different lengths (", mean_re.size(), ", ", mean_im.size(), ", ", n, ")");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  BandConcentration c;
  c.R.resize(n);
  double sum_R = 0, sum_centre = 0, sum_norm = 0, best = -1;
  for (size_t f = 0; f < n; ++f) {
    const double centre = std::hypot(static_cast<double>(mean_re[f]), static_cast<double>(mean_im[f]));
    const double norm = abs_mean[f];
    c.R[f] = norm > 0 ? centre / norm : nan;
    sum_R += c.R[f];
    sum_centre += centre;
    sum_norm += norm;
    if (norm > best) {
      best = norm;
      c.top_band = static_cast<int>(f);
    }
  }
  c.band_mean_R = sum_R / static_cast<double>(n);
  c.weighted_R = sum_norm > 0 ? sum_centre / sum_norm : nan;
  c.top_band_R = c.R[c.top_band];
  return c;
}

ConcentrationSummary summarize_concentration(std::span<const BandConcentration> heads, double threshold) {
  ConcentrationSummary s;
  s.threshold = threshold;
  int n_band = 0, n_weighted = 0, n_top = 0, above = 0;
  for (const BandConcentration& h : heads) {
    if (std::isfinite(h.band_mean_R)) s.band_mean_R += h.band_mean_R, ++n_band;
    if (std::isfinite(h.top_band_R)) s.top_band_R += h.top_band_R, ++n_top;
    if (std::isfinite(h.weighted_R)) {
      s.weighted_R += h.weighted_R, ++n_weighted;
      above += h.weighted_R > threshold;
    }
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  s.heads = static_cast<int>(heads.size());
  s.band_mean_R = n_band ? s.band_mean_R / n_band : nan;
  s.top_band_R = n_top ? s.top_band_R / n_top : nan;
  s.weighted_R = n_weighted ? s.weighted_R / n_weighted : nan;
  s.fraction_above = n_weighted ? static_cast<double>(above) / n_weighted : nan;
  return s;
}

}  // namespace triattn
