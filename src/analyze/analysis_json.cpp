#include "analyze/analysis_json.h"

#include <cmath>

namespace triattn {

namespace {

using nlohmann::json;

json numbers(const std::vector<double>& v) {
  json a = json::array();
  for (double x : v) a.push_back(json_number(x));
  return a;
}

json points(const std::vector<std::complex<double>>& v) {
  json a = json::array();
  for (const auto& z : v) a.push_back({z.real(), z.imag()});
  return a;
}

json concentration(const BandConcentration& c) {
  return {{"R", numbers(c.R)},
          {"band_mean_R", json_number(c.band_mean_R)},
          {"weighted_R", json_number(c.weighted_R)},
          {"top_band", c.top_band},
          {"top_band_R", json_number(c.top_band_R)}};
}

json summary(const ConcentrationSummary& s) {
  return {{"heads", s.heads},
          {"band_mean_R", json_number(s.band_mean_R)},
          {"weighted_R", json_number(s.weighted_R)},
          {"top_band_R", json_number(s.top_band_R)},
          {"threshold", s.threshold},
          {"fraction_weighted_R_above", json_number(s.fraction_above)}};
}

}  // namespace

json json_number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json analysis_json(const AnalysisRun& run, const std::vector<Figure>& figures, const std::vector<std::string>& words) {
  const AnalysisSource& s = run.source;
  const Analysis& a = run.analysis;
  json j;
  j["format"] = kAnalysisFormatName;
  j["format_version"] = kAnalysisFormatVersion;
  j["model"] = {{"path", s.model_path},         {"name", s.model_name},   {"architecture", s.architecture},
                {"n_layers", s.n_layers},       {"n_heads", s.n_heads},   {"n_kv_heads", s.n_kv_heads},
                {"head_dim", s.head_dim},       {"context_length", s.context_length},
                {"rope_theta", s.rope_theta},   {"rope_scaling", s.rope_scaling}};
  // Partial RoPE only, so reports of full-RoPE models keep their shape.
  if (s.rotary_dim > 0 && s.rotary_dim < s.head_dim) j["model"]["rotary_dim"] = s.rotary_dim;
  j["input"] = {{"token_count", s.tokens.size()}, {"windows", s.windows}, {"input_hash", s.input_hash}, {"tokens", s.tokens}};
  j["stats"] = {{"source", s.stats_source},
                {"token_count", s.stats_tokens},
                {"input_hash", s.stats_input_hash},
                {"key_source", s.key_stats_source}};
  j["rope_freqs"] = numbers(a.omega);
  j["summary"] = {{"query", summary(a.query_summary)},
                  {"key", summary(a.key_summary)},
                  {"rbar_mean", json_number(a.rbar_mean)},
                  {"rbar_heads", a.rbar_heads},
                  {"rbar_histogram", {{"lo", a.rbar_histogram.lo}, {"hi", a.rbar_histogram.hi}, {"counts", a.rbar_histogram.counts}}},
                  {"dominant_top_k", a.query_heads.empty() ? 0 : a.query_heads[0].dominant.top_k},
                  {"mean_top1_share", json_number(a.mean_top1_share)},
                  {"mean_topk_share", json_number(a.mean_topk_share)},
                  {"mean_norm_term_share", json_number(a.mean_norm_term_share)}};
  json layers = json::array();
  for (const LayerAnalysis& l : a.layers)
    layers.push_back({{"layer", l.layer},
                      {"query_weighted_R", json_number(l.query_weighted_R)},
                      {"key_weighted_R", json_number(l.key_weighted_R)},
                      {"rbar", json_number(l.rbar)},
                      {"norm_term_share", json_number(l.norm_term_share)}});
  j["layers"] = layers;
  json qh = json::array();
  for (const QueryHeadAnalysis& q : a.query_heads) {
    json h = concentration(q.concentration);
    h["layer"] = q.layer;
    h["head"] = q.head;
    h["kv_head"] = q.kv_head;
    h["dominant_bands"] = q.dominant.ranked;
    h["dominant_contribution"] = numbers(q.dominant.contribution);
    h["top1_share"] = json_number(q.dominant.top1_share);
    h["topk_share"] = json_number(q.dominant.topk_share);
    h["norm_term_share"] = json_number(q.dominant.norm_term_share);
    h["rbar"] = json_number(q.reconstruction.rbar);
    h["rbar_positions"] = q.reconstruction.positions;
    qh.push_back(h);
  }
  j["query_heads"] = qh;
  json kh = json::array();
  for (const KeyHeadAnalysis& k : a.key_heads) {
    json h = concentration(k.concentration);
    h["layer"] = k.layer;
    h["head"] = k.head;
    kh.push_back(h);
  }
  j["key_heads"] = kh;
  json chosen = json::array();
  for (const ChosenHeadAnalysis& c : a.chosen)
    chosen.push_back({{"layer", c.choice.layer},
                      {"head", c.choice.head},
                      {"kv_head", c.kv_head},
                      {"why", c.choice.why},
                      {"curve",
                       {{"delta", c.curve.delta},
                        {"actual_mean", numbers(c.curve.actual_mean)},
                        {"predicted", numbers(c.curve.predicted)},
                        {"pairs", c.curve.pairs}}},
                      {"scatter",
                       {{"band", c.scatter.band},
                        {"omega", c.scatter.omega},
                        {"positions", c.scatter.positions},
                        {"q_raw", points(c.scatter.q_raw)},
                        {"k_raw", points(c.scatter.k_raw)},
                        {"q_rope", points(c.scatter.q_rope)},
                        {"k_rope", points(c.scatter.k_rope)}}}});
  j["chosen_heads"] = chosen;
  json figs = json::array();
  for (const Figure& f : figures) figs.push_back({{"file", f.file}, {"title", f.title}});
  j["figures"] = figs;
  j["findings"] = words;
  return j;
}

}  // namespace triattn
