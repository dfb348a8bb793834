#include "analyze/report_html.h"

#include <cmath>
#include <cstdio>

#include "analyze/number_text.h"
#include "analyze/svg.h"

namespace triattn {

namespace {

std::string fmt(const char* f, double v) { return std::isfinite(v) ? number_text(f, v) : "n/a"; }

std::string td(const std::string& s) { return "<td>" + xml_escape(s) + "</td>"; }

// "64 " or, under partial RoPE, "rotary_dim 64: 32 " (the figures cover the rotated bands only).
std::string rotary_text(const AnalysisSource& s) {
  const int rot = s.rotary_dim > 0 ? s.rotary_dim : s.head_dim;
  const std::string bands = std::to_string(rot / 2) + " ";
  return rot < s.head_dim ? "rotary_dim " + std::to_string(rot) + ": " + bands + "rotated " : bands;
}

std::string row(const std::string& name, const std::string& value) {
  return "<tr><th>" + xml_escape(name) + "</th>" + td(value) + "</tr>\n";
}

// Markdown-style `code` spans in the findings become <code>.
std::string with_code(const std::string& s) {
  std::string out, esc = xml_escape(s);
  bool open = false;
  for (char c : esc) {
    if (c == '`') {
      out += open ? "</code>" : "<code>";
      open = !open;
    } else {
      out += c;
    }
  }
  if (open) out += "</code>";
  return out;
}

const char* kStyle = R"(body{font-family:sans-serif;max-width:1100px;margin:1.5em auto;padding:0 1em;color:#222;line-height:1.45}
h1{font-size:1.5em}h2{margin-top:1.6em;border-bottom:1px solid #ddd}h3{font-size:1.05em;margin:0 0 .4em}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ddd;padding:2px 8px;text-align:right}
th{background:#f4f4f4}table.kv th{text-align:left}.meta{color:#555}figure{margin:1.2em 0;padding:.6em;border:1px solid #e4e4e4}
figcaption{color:#444;max-width:820px;margin-top:.3em}figure svg{max-width:100%;height:auto}
dt{font-weight:bold;margin-top:.6em}code{background:#f4f4f4;padding:0 3px}.heads{font-size:.85em})";

}  // namespace

const std::vector<Definition>& analysis_definitions() {
  static const std::vector<Definition> defs = {
      {"Band f", "RoPE rotates a head's vector in pairs of coordinates, one pair per frequency ω_f; band f is that pair "
                 "read as one complex number x_f. Bands are indexed by frequency (f = 0 rotates fastest)."},
      {"R_f (mean resultant length)",
       "R_f = |E x_f| / E|x_f| over the tokens of the input (or the calibration text), for the pre-RoPE queries of "
       "each query head and the keys of each KV head. 1: every token's x_f points the same way; 0: no common direction."},
      {"Band-mean R", "mean_f R_f: every band counts the same."},
      {"Weighted R", "Σ_f |E x_f| / Σ_f E|x_f|: R_f weighted by each band's mean norm, so the bands that carry the "
                     "logit count most. The model's figure is the mean over heads, and the fraction of heads above 0.95."},
      {"Top-band R", "R_f of the band with the largest E|x_f|."},
      {"Dominant bands", "The bands ranked by E|q_f|·E|k_f|, the most band f can add to q·k; the shares say how much "
                         "of Σ_f E|q_f|·E|k_f| the top 1 and top 3 bands carry."},
      {"Norm-term share", "Σ_f (E|q_f| − |E q_f|)·E|k_f| / Σ_f E|q_f|·E|k_f|: the part of the score's scale that "
                          "TriAttention's norm term carries. High in diffuse heads, near 0 in concentrated ones."},
      {"Actual logit", "a(t, Δ) = Re Σ_f q_f(t)·conj(k_f(t−Δ))·e^{iω_f Δ}: the post-RoPE dot product of the query at "
                       "position t and the key Δ tokens back, written in pre-RoPE bands (before 1/√d)."},
      {"Predicted logit", "p(Δ) = Σ_f |E q_f||E k_f| cos(ω_f Δ + arg E q_f − arg E k_f): what the trigonometric series "
                          "predicts from the centres alone, the same for every query."},
      {"r̄ (reconstruction correlation)",
       "For every query position t, the Pearson correlation between a(t, Δ) and p(Δ) over Δ = 1, 2, 4, … ≤ t (at "
       "least 3 distances, so t ≥ 4; positions where either set of values is constant are skipped), averaged over "
       "positions. The model's figure is the mean over query heads. Positions are counted inside each window of the "
       "model's context length."},
  };
  return defs;
}

std::string report_html(const AnalysisRun& run, const std::vector<Figure>& figures,
                        const std::vector<std::string>& findings) {
  const AnalysisSource& s = run.source;
  const Analysis& a = run.analysis;
  const std::string name = s.model_name.empty() ? s.model_path : s.model_name;
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<link rel=\"icon\" href=\"data:,\">\n";
  h += "<title>triattn analyze: " + xml_escape(name) + "</title>\n<style>" + std::string(kStyle) + "</style>\n</head>\n<body>\n";
  h += "<h1>Q/K concentration of " + xml_escape(name) + "</h1>\n";
  h += "<p class=\"meta\">" + xml_escape(s.architecture) + ", " + std::to_string(s.n_layers) + " layers, " +
       std::to_string(s.n_heads) + " query heads / " + std::to_string(s.n_kv_heads) + " KV heads, head_dim " +
       std::to_string(s.head_dim) + " (" + rotary_text(s) + "bands), RoPE θ " + fmt("%g", s.rope_theta) +
       " (" + xml_escape(s.rope_scaling) + "). Input: " + std::to_string(s.tokens.size()) + " tokens in " +
       std::to_string(s.windows) + " window(s), " + xml_escape(s.input_hash) + ". Statistics: " +
       (s.stats_source == "input" ? std::string("from the input itself") : "from " + xml_escape(s.stats_source)) + " (" +
       std::to_string(s.stats_tokens) + " tokens)" +
       (s.key_stats_source != s.stats_source ? "; key statistics from the " + xml_escape(s.key_stats_source) : std::string()) +
       ". Numbers: <a href=\"analysis.json\">analysis.json</a>.</p>\n";

  h += "<section id=\"findings\">\n<h2>What this means for TriAttention</h2>\n<ul>\n";
  for (const std::string& f : findings) h += "<li>" + with_code(f) + "</li>\n";
  h += "</ul>\n<p class=\"meta\">Thresholds: a head is concentrated when its weighted R exceeds 0.95 (the paper's "
       "threshold); a layer is diffuse when its mean weighted R is below 0.5; r̄ of 0.8 or more predicts closely, 0.5 "
       "or more roughly.</p>\n</section>\n";

  const ConcentrationSummary& q = a.query_summary;
  const ConcentrationSummary& k = a.key_summary;
  h += "<section id=\"summary\">\n<h2>Model figures</h2>\n<table class=\"kv\">\n";
  h += "<tr><th></th><th>queries</th><th>keys</th></tr>\n";
  auto pair = [&](const std::string& n, double vq, double vk, const char* f) {
    h += "<tr><th>" + xml_escape(n) + "</th>" + td(fmt(f, vq)) + td(fmt(f, vk)) + "</tr>\n";
  };
  pair("mean band-mean R", q.band_mean_R, k.band_mean_R, "%.4f");
  pair("mean weighted R", q.weighted_R, k.weighted_R, "%.4f");
  pair("mean top-band R", q.top_band_R, k.top_band_R, "%.4f");
  pair("fraction of heads with weighted R > 0.95", q.fraction_above, k.fraction_above, "%.3f");
  h += "</table>\n<table class=\"kv\">\n";
  h += row("mean r̄ over query heads", fmt("%.4f", a.rbar_mean) + " (" + std::to_string(a.rbar_heads) + " heads)");
  h += row("mean share of the top band", fmt("%.3f", a.mean_top1_share));
  h += row("mean share of the top 3 bands", fmt("%.3f", a.mean_topk_share));
  h += row("mean norm-term share", fmt("%.3f", a.mean_norm_term_share));
  h += "</table>\n</section>\n";

  h += "<section id=\"figures\">\n<h2>Figures</h2>\n";
  for (const Figure& f : figures) {
    h += "<figure class=\"figure\" data-file=\"" + xml_escape(f.file) + "\">\n<h3>" + xml_escape(f.title) + "</h3>\n";
    h += f.svg;
    h += "<figcaption>" + xml_escape(f.caption) + " (<a href=\"" + xml_escape(f.file) + "\">" + xml_escape(f.file) +
         "</a>)</figcaption>\n</figure>\n";
  }
  h += "</section>\n";

  h += "<section id=\"layers\">\n<h2>Per layer</h2>\n<table>\n<tr><th>layer</th><th>query weighted R</th><th>key "
       "weighted R</th><th>r̄</th><th>norm-term share</th></tr>\n";
  for (const LayerAnalysis& l : a.layers)
    h += "<tr>" + td(std::to_string(l.layer)) + td(fmt("%.4f", l.query_weighted_R)) + td(fmt("%.4f", l.key_weighted_R)) +
         td(fmt("%.4f", l.rbar)) + td(fmt("%.3f", l.norm_term_share)) + "</tr>\n";
  h += "</table>\n</section>\n";

  h += "<section id=\"heads\">\n<h2>Per query head</h2>\n<table class=\"heads\">\n<tr><th>layer</th><th>head</th>"
       "<th>band-mean R</th><th>weighted R</th><th>top band</th><th>top-band R</th><th>dominant bands</th>"
       "<th>top-3 share</th><th>norm-term share</th><th>r̄</th></tr>\n";
  for (const QueryHeadAnalysis& qh : a.query_heads) {
    std::string dom;
    for (int i = 0; i < qh.dominant.top_k; ++i) dom += (i ? ", " : "") + std::to_string(qh.dominant.ranked[i]);
    h += "<tr>" + td(std::to_string(qh.layer)) + td(std::to_string(qh.head)) + td(fmt("%.4f", qh.concentration.band_mean_R)) +
         td(fmt("%.4f", qh.concentration.weighted_R)) + td(std::to_string(qh.concentration.top_band)) +
         td(fmt("%.4f", qh.concentration.top_band_R)) + td(dom) + td(fmt("%.3f", qh.dominant.topk_share)) +
         td(fmt("%.3f", qh.dominant.norm_term_share)) + td(fmt("%.4f", qh.reconstruction.rbar)) + "</tr>\n";
  }
  h += "</table>\n</section>\n";

  h += "<section id=\"definitions\">\n<h2>Definitions</h2>\n<dl>\n";
  for (const Definition& d : analysis_definitions())
    h += "<dt>" + xml_escape(d.term) + "</dt><dd>" + xml_escape(d.text) + "</dd>\n";
  h += "</dl>\n</section>\n</body>\n</html>\n";
  return h;
}

}  // namespace triattn
