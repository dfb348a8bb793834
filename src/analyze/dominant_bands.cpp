#include "analyze/dominant_bands.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.h"

namespace triattn {

DominantBands dominant_bands(std::span<const float> q_mean_re, std::span<const float> q_mean_im,
                             std::span<const float> q_abs_mean, std::span<const float> k_abs_mean) {
  const size_t n = q_abs_mean.size();
  if (q_mean_re.size() != n || q_mean_im.size() != n || k_abs_mean.size() != n || n == 0)
    fail("analyze: band statistics of different lengths");
  std::vector<double> contrib(n), norm_part(n);
  for (size_t f = 0; f < n; ++f) {
    const double centre = std::hypot(static_cast<double>(q_mean_re[f]), static_cast<double>(q_mean_im[f]));
    contrib[f] = static_cast<double>(q_abs_mean[f]) * k_abs_mean[f];
    norm_part[f] = (q_abs_mean[f] - centre) * k_abs_mean[f];
  }
  DominantBands d;
  d.ranked.resize(n);
  std::iota(d.ranked.begin(), d.ranked.end(), 0);
  std::stable_sort(d.ranked.begin(), d.ranked.end(), [&](int a, int b) { return contrib[a] > contrib[b]; });
  for (int f : d.ranked) d.contribution.push_back(contrib[f]);
  const double total = std::accumulate(contrib.begin(), contrib.end(), 0.0);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  d.top_k = std::min<int>(kDominantTopK, static_cast<int>(n));
  d.top1_share = total > 0 ? d.contribution[0] / total : nan;
  d.topk_share = total > 0 ? std::accumulate(d.contribution.begin(), d.contribution.begin() + d.top_k, 0.0) / total : nan;
  d.norm_term_share = total > 0 ? std::accumulate(norm_part.begin(), norm_part.end(), 0.0) / total : nan;
  return d;
}

}  // namespace triattn
