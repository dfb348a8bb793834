#include "analyze/findings.h"

#include <cmath>
#include <cstdio>

#include "analyze/number_text.h"

namespace triattn {

namespace {


std::string pct(double v) { return std::isfinite(v) ? number_text("%.0f%%", 100 * v) : "n/a"; }
std::string num3(double v) { return std::isfinite(v) ? number_text("%.3f", v) : "n/a"; }

std::string list(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? (i + 1 == v.size() ? " and " : ", ") : "") + std::to_string(v[i]);
  return s;
}

}  // namespace

std::vector<std::string> findings(const AnalysisRun& run) {
  const Analysis& a = run.analysis;
  const ConcentrationSummary& q = a.query_summary;
  std::vector<std::string> out;
  const int above = static_cast<int>(std::lround(q.fraction_above * q.heads));
  out.push_back(std::to_string(above) + " of " + std::to_string(q.heads) + " query heads (" + pct(q.fraction_above) +
                ") have weighted R above " + number_text("%.2f", kConcentratedR) + "; the mean weighted R is " +
                num3(q.weighted_R) + " (band-mean " + num3(q.band_mean_R) + ", top-band " + num3(q.top_band_R) + "). " +
                (q.fraction_above >= 0.5 ? "Most query heads are concentrated: their pre-RoPE queries keep one direction "
                                           "per band, which is what TriAttention's query centres stand for."
                                         : "Most query heads are not concentrated at the paper's threshold: a fixed "
                                           "query centre describes them only in part."));
  out.push_back("Keys: mean weighted R " + num3(a.key_summary.weighted_R) + ", " + pct(a.key_summary.fraction_above) +
                " of KV heads above " + number_text("%.2f", kConcentratedR) + ".");
  if (std::isfinite(a.rbar_mean)) {
    const char* how = a.rbar_mean >= kGoodRbar ? "closely" : a.rbar_mean >= kFairRbar ? "roughly" : "poorly";
    out.push_back("The mean reconstruction correlation r̄ over " + std::to_string(a.rbar_heads) + " query heads is " +
                  num3(a.rbar_mean) + ": the trigonometric series predicts " + how +
                  " how a query's logits vary with the distance to its keys.");
  } else {
    out.push_back("No query position had three distances to correlate over, so r̄ is undefined (the input is too short).");
  }
  std::vector<int> diffuse, concentrated;
  double diffuse_norm = 0;
  for (const LayerAnalysis& l : a.layers) {
    if (l.query_weighted_R < kDiffuseR) diffuse.push_back(l.layer), diffuse_norm += l.norm_term_share;
    if (l.query_weighted_R >= kConcentratedR) concentrated.push_back(l.layer);
  }
  if (!diffuse.empty())
    out.push_back(std::string(diffuse.size() == 1 ? "Layer " : "Layers ") + list(diffuse) +
                  (diffuse.size() == 1 ? " is" : " are") + " diffuse (mean query weighted R below " +
                  number_text("%.1f", kDiffuseR) + "): there TriAttention ranks keys mostly by the norm term, which carries " +
                  pct(diffuse_norm / static_cast<double>(diffuse.size())) + " of the score's scale on average.");
  if (!concentrated.empty())
    out.push_back(std::string(concentrated.size() == 1 ? "Layer " : "Layers ") + list(concentrated) +
                  (concentrated.size() == 1 ? " is" : " are") + " concentrated (mean weighted R at least " +
                  number_text("%.2f", kConcentratedR) + "): the trigonometric term does most of the scoring there.");
  out.push_back("Dominant bands: the top band carries " + pct(a.mean_top1_share) + " and the top " +
                std::to_string(a.query_heads.empty() ? 0 : a.query_heads[0].dominant.top_k) + " carry " +
                pct(a.mean_topk_share) + " of Σ_f E|q_f|·E|k_f| on average, and the norm term " +
                pct(a.mean_norm_term_share) + ".");
  const bool concentrated_model = q.fraction_above >= 0.5;
  const bool predicts = std::isfinite(a.rbar_mean) && a.rbar_mean >= kFairRbar;
  if (concentrated_model && predicts)
    out.push_back("Verdict: TriAttention's premise holds on this model; its scores should track the real attention "
                  "over distance, and compression should cost little.");
  else if (predicts)
    out.push_back("Verdict: queries are only partly concentrated, yet the centres still predict the distance "
                  "preference; TriAttention should work, with the norm term doing more of the ranking. Check with "
                  "`triattn eval`.");
  else
    out.push_back("Verdict: the concentration TriAttention rests on is weak on this model; expect its ranking to be "
                  "little better than recency. Check with `triattn eval` before relying on it.");
  const int64_t tokens = run.source.stats_tokens;
  if (tokens < 256)
    out.push_back("Caution: the statistics come from only " + std::to_string(tokens) +
                  " tokens; below a few hundred tokens every R is inflated by sampling noise.");
  return out;
}

}  // namespace triattn
