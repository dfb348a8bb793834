#include "analyze/stats_compare.h"

#include <cmath>
#include <complex>
#include <cstdio>
#include <limits>
#include <span>

#include "analyze/analysis_json.h"
#include "analyze/concentration.h"
#include "core/error.h"

namespace triattn {

void check_comparable(const LoadedStats& a, const std::string& path_a, const LoadedStats& b, const std::string& path_b) {
  const StatsInfo &x = a.info, &y = b.info;
  std::vector<std::string> bad;
  auto cmp = [&](const char* field, int u, int v) {
    if (u != v) bad.push_back(std::string(field) + " " + std::to_string(u) + " vs " + std::to_string(v));
  };
  cmp("n_layers", a.stats->n_layers, b.stats->n_layers);
  cmp("n_heads", a.stats->n_heads, b.stats->n_heads);
  cmp("head_dim", a.stats->head_dim, b.stats->head_dim);
  cmp("rotary_dim", a.stats->rotary_dims(), b.stats->rotary_dims());
  // Only where both files record it (the official formats and TRIA files do not).
  if (!a.official_pt && !b.official_pt && !x.architecture.empty() && !y.architecture.empty() &&
      x.architecture != y.architecture)
    bad.push_back("architecture '" + x.architecture + "' vs '" + y.architecture + "'");
  if (x.rope_freqs.size() == y.rope_freqs.size())
    for (size_t f = 0; f < x.rope_freqs.size(); ++f)
      if (std::abs(x.rope_freqs[f] - y.rope_freqs[f]) > 1e-5f * std::abs(y.rope_freqs[f])) {
        bad.push_back("RoPE frequency of band " + std::to_string(f) + " (" + std::to_string(x.rope_freqs[f]) + " vs " +
                      std::to_string(y.rope_freqs[f]) + ")");
        break;
      }
  if (bad.empty()) return;
  std::string msg;
  for (const std::string& s : bad) msg += (msg.empty() ? "" : ", ") + s;
  fail("--compare: ", path_a, " and ", path_b, " are statistics of different models (", msg,
       "); compare two calibrations of the same model");
}

StatsComparison compare_stats(const HeadStats& a, const HeadStats& b) {
  if (a.n_layers != b.n_layers || a.n_heads != b.n_heads || a.head_dim != b.head_dim ||
      a.rotary_dims() != b.rotary_dims())
    fail("--compare: statistics of different shapes");
  const int F = a.bands();  // the centres compared are the rotated bands'
  const double nan = std::numeric_limits<double>::quiet_NaN();
  StatsComparison c;
  double sum_cos = 0, sum_dist = 0;
  int n_cos = 0, n_dist = 0;
  for (int l = 0; l < a.n_layers; ++l)
    for (int h = 0; h < a.n_heads; ++h) {
      const size_t base = (static_cast<size_t>(l) * a.n_heads + h) * F;
      double dot = 0, na = 0, nb = 0, nd = 0;
      for (int f = 0; f < F; ++f) {
        const std::complex<double> u(a.q_mean_real[base + f], a.q_mean_imag[base + f]),
            v(b.q_mean_real[base + f], b.q_mean_imag[base + f]);
        dot += std::real(u * std::conj(v));
        na += std::norm(u), nb += std::norm(v), nd += std::norm(u - v);
      }
      HeadCentreDifference d;
      d.layer = l, d.head = h;
      d.cosine = na > 0 && nb > 0 ? dot / std::sqrt(na * nb) : nan;
      d.relative_distance = na > 0 ? std::sqrt(nd / na) : nan;
      auto span = [&](const std::vector<float>& t) { return std::span<const float>(t).subspan(base, F); };
      d.weighted_R_first = band_concentration(span(a.q_mean_real), span(a.q_mean_imag), span(a.q_abs_mean)).weighted_R;
      d.weighted_R_second = band_concentration(span(b.q_mean_real), span(b.q_mean_imag), span(b.q_abs_mean)).weighted_R;
      const int i = static_cast<int>(c.heads.size());
      if (std::isfinite(d.cosine)) {
        sum_cos += d.cosine, ++n_cos;
        if (c.min_cosine_index < 0 || d.cosine < c.heads[c.min_cosine_index].cosine) c.min_cosine_index = i;
      }
      if (std::isfinite(d.relative_distance)) {
        sum_dist += d.relative_distance, ++n_dist;
        if (c.max_distance_index < 0 || d.relative_distance > c.heads[c.max_distance_index].relative_distance)
          c.max_distance_index = i;
      }
      c.heads.push_back(d);
    }
  c.mean_cosine = n_cos ? sum_cos / n_cos : nan;
  c.min_cosine = c.min_cosine_index >= 0 ? c.heads[c.min_cosine_index].cosine : nan;
  c.mean_relative_distance = n_dist ? sum_dist / n_dist : nan;
  c.max_relative_distance = c.max_distance_index >= 0 ? c.heads[c.max_distance_index].relative_distance : nan;
  return c;
}

std::string comparison_table(const StatsComparison& c, const std::string& path_a, const std::string& path_b) {
  std::string out = "query centres: S1 = " + path_a + ", S2 = " + path_b + "\n";
  char buf[160];
  std::snprintf(buf, sizeof buf, "%5s %5s %9s %10s %9s %9s\n", "layer", "head", "cosine", "rel_dist", "wR(S1)", "wR(S2)");
  out += buf;
  for (const HeadCentreDifference& d : c.heads) {
    std::snprintf(buf, sizeof buf, "%5d %5d %9.4f %10.4f %9.4f %9.4f\n", d.layer, d.head, d.cosine, d.relative_distance,
                  d.weighted_R_first, d.weighted_R_second);
    out += buf;
  }
  auto where = [&](int i) {
    return i < 0 ? std::string() : " (layer " + std::to_string(c.heads[i].layer) + ", head " + std::to_string(c.heads[i].head) + ")";
  };
  std::snprintf(buf, sizeof buf, "mean cosine %.4f, lowest %.4f", c.mean_cosine, c.min_cosine);
  out += buf + where(c.min_cosine_index) + "\n";
  std::snprintf(buf, sizeof buf, "mean relative distance %.4f, largest %.4f", c.mean_relative_distance, c.max_relative_distance);
  out += buf + where(c.max_distance_index) + "\n";
  return out;
}

nlohmann::json comparison_json(const StatsComparison& c, const std::string& path_a, const LoadedStats& a,
                               const std::string& path_b, const LoadedStats& b) {
  using nlohmann::json;
  auto file = [](const std::string& p, const LoadedStats& s) {
    return json{{"path", p}, {"model_name", s.info.model_name}, {"token_count", s.info.token_count},
                {"input_hash", s.info.input_hash}};
  };
  json heads = json::array();
  for (const HeadCentreDifference& d : c.heads)
    heads.push_back({{"layer", d.layer},
                     {"head", d.head},
                     {"cosine", json_number(d.cosine)},
                     {"relative_distance", json_number(d.relative_distance)},
                     {"weighted_R_first", json_number(d.weighted_R_first)},
                     {"weighted_R_second", json_number(d.weighted_R_second)}});
  return {{"format", "triattn-stats-compare"},
          {"format_version", 1},
          {"first", file(path_a, a)},
          {"second", file(path_b, b)},
          {"heads", heads},
          {"summary",
           {{"mean_cosine", json_number(c.mean_cosine)},
            {"min_cosine", json_number(c.min_cosine)},
            {"mean_relative_distance", json_number(c.mean_relative_distance)},
            {"max_relative_distance", json_number(c.max_relative_distance)}}}};
}

}  // namespace triattn
