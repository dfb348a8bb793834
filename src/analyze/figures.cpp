#include "analyze/figures.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "analyze/number_text.h"
#include "analyze/plot_frame.h"
#include "analyze/svg.h"

namespace triattn {

namespace {


std::string head_name(int layer, int head) { return "L" + std::to_string(layer) + "H" + std::to_string(head); }

const char* kActualColour = "#1f5fa8";
const char* kPredictedColour = "#d9711c";

}  // namespace

std::string sequential_colour(double v) {
  if (!std::isfinite(v)) return "#bbbbbb";
  // Anchors from dark violet through blue and green to yellow: monotone in lightness, so the
  // map reads in grey scale too.
  static const double anchors[5][3] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
  const double x = std::clamp(v, 0.0, 1.0) * 4;
  const int i = std::min(3, static_cast<int>(x));
  const double t = x - i;
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", static_cast<int>(std::lround(anchors[i][0] + t * (anchors[i + 1][0] - anchors[i][0]))),
                static_cast<int>(std::lround(anchors[i][1] + t * (anchors[i + 1][1] - anchors[i][1]))),
                static_cast<int>(std::lround(anchors[i][2] + t * (anchors[i + 1][2] - anchors[i][2]))));
  return buf;
}

Figure r_heatmap_figure(const std::string& file, const std::string& title, const std::string& caption,
                        const std::vector<double>& values, int n_layers, int n_heads, const std::string& head_label) {
  const double cw = std::clamp(560.0 / n_heads, 6.0, 48.0), ch = std::clamp(420.0 / n_layers, 5.0, 30.0);
  const double left = 70, top = 36, grid_w = cw * n_heads, grid_h = ch * n_layers;
  const double width = left + grid_w + 110, height = top + grid_h + 56;
  Svg svg(width, height, title);
  svg.text(left, 22, title, 14);
  const bool labels = cw >= 30 && ch >= 15;
  for (int l = 0; l < n_layers; ++l)
    for (int h = 0; h < n_heads; ++h) {
      const double v = values[static_cast<size_t>(l) * n_heads + h];
      const double x = left + h * cw, y = top + l * ch;
      svg.rect(x, y, cw, ch,
               Svg::Style::filled(sequential_colour(v)).outlined("white", 0.5).titled(
                   "layer " + std::to_string(l) + ", " + head_label + " " + std::to_string(h) + ": " +
                           (std::isfinite(v) ? number_text("%.4f", v) : std::string("undefined"))));
      if (labels && std::isfinite(v))
        svg.text(x + cw / 2, y + ch / 2 + 4, number_text("%.2f", v), 10, "middle", 0, v > 0.6 ? "#222" : "#fff");
    }
  // Axis labels: every layer/head when there is room, else every few.
  const int lstep = std::max(1, static_cast<int>(std::ceil(12.0 / ch))), hstep = std::max(1, static_cast<int>(std::ceil(16.0 / cw)));
  for (int l = 0; l < n_layers; l += lstep) svg.text(left - 6, top + l * ch + ch / 2 + 4, std::to_string(l), 10, "end");
  for (int h = 0; h < n_heads; h += hstep) svg.text(left + h * cw + cw / 2, top + grid_h + 14, std::to_string(h), 10, "middle");
  svg.text(left + grid_w / 2, top + grid_h + 34, head_label, 12, "middle");
  svg.text(left - 40, top + grid_h / 2, "layer", 12, "middle", -90);
  // Colour bar 0..1.
  const double bx = left + grid_w + 30, bh = std::max(grid_h, 100.0);
  for (int i = 0; i < 50; ++i)
    svg.rect(bx, top + bh * (1 - (i + 1) / 50.0), 14, bh / 50 + 0.5, Svg::Style::filled(sequential_colour((i + 0.5) / 50)));
  svg.rect(bx, top, 14, bh, Svg::Style::stroked("#444"));
  for (double v : {0.0, 0.5, 1.0}) {
    const double y = top + bh * (1 - v);
    svg.line(bx + 14, y, bx + 18, y, Svg::Style::stroked("#444"));
    svg.text(bx + 21, y + 4, number_text("%.1f", v), 10);
  }
  // The paper's threshold for a concentrated head.
  svg.line(bx - 3, top + bh * 0.05, bx + 17, top + bh * 0.05, Svg::Style::stroked("#d00", 1.5).titled("0.95"));
  svg.text(bx - 5, top + bh * 0.05 + 4, "0.95", 9, "end", 0, "#d00");
  return {file, title, caption, svg.str()};
}

Figure rbar_histogram_figure(const Analysis& a) {
  const std::string title = "Reconstruction correlation r̄ per query head";
  Svg svg(620, 330, title);
  svg.text(70, 22, title, 14);
  const Histogram& h = a.rbar_histogram;
  int64_t most = 1;
  for (int64_t c : h.counts) most = std::max(most, c);
  PlotFrame f{70, 36, 590, 280, {h.lo, h.hi, false, "r̄ (mean Pearson correlation of actual and predicted logits)"},
              {0, static_cast<double>(most) * 1.1, false, "query heads"}};
  draw_frame(svg, f);
  const int bins = static_cast<int>(h.counts.size());
  for (int i = 0; i < bins; ++i) {
    const double lo = h.lo + (h.hi - h.lo) * i / bins, hi = h.lo + (h.hi - h.lo) * (i + 1) / bins;
    if (!h.counts[i]) continue;
    svg.rect(f.px(lo) + 1, f.py(static_cast<double>(h.counts[i])), f.px(hi) - f.px(lo) - 2,
             f.bottom - f.py(static_cast<double>(h.counts[i])),
             Svg::Style::filled(kActualColour)
                 .titled(number_text("%.2f", lo) + " to " + number_text("%.2f", hi) + ": " + std::to_string(h.counts[i]) + " head(s)"));
  }
  if (std::isfinite(a.rbar_mean)) {
    const double x = f.px(a.rbar_mean);
    svg.line(x, f.top, x, f.bottom, Svg::Style::stroked(kPredictedColour, 2).dashed("5,3"));
    svg.text(x - 4, f.top + 14, "mean " + number_text("%.3f", a.rbar_mean), 11, "end", 0, kPredictedColour);
  }
  return {"rbar_histogram.svg", title,
          "How many query heads reach each r̄. Near 1: the trigonometric series built from the head's query and key "
          "centres reproduces how its logits rise and fall with distance; near 0: it does not (the head's attention "
          "depends on the content of each token, which the series cannot know).",
          svg.str()};
}

Figure distance_curve_figure(const ChosenHeadAnalysis& c, double rbar) {
  const std::string name = head_name(c.choice.layer, c.choice.head);
  const std::string title = "Layer " + std::to_string(c.choice.layer) + ", head " + std::to_string(c.choice.head) +
                            ": logit vs distance (r̄ " + (std::isfinite(rbar) ? number_text("%.3f", rbar) : std::string("n/a")) + ")";
  Svg svg(620, 372, title);
  svg.text(70, 22, title, 14);
  const DistanceCurve& d = c.curve;
  double lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < d.delta.size(); ++i)
    lo = std::min({lo, d.actual_mean[i], d.predicted[i]}), hi = std::max({hi, d.actual_mean[i], d.predicted[i]});
  pad_range(lo, hi);
  const double dmax = d.delta.empty() ? 2 : std::max<double>(2, static_cast<double>(d.delta.back()));
  PlotFrame f{70, 36, 590, 276, {1, dmax, true, "distance Δ = query position − key position (log scale)"},
              {lo, hi, false, "q·k (pre-softmax, unscaled)"}};
  draw_frame(svg, f);
  std::vector<std::pair<double, double>> actual, predicted;
  for (size_t i = 0; i < d.delta.size(); ++i) {
    actual.emplace_back(f.px(static_cast<double>(d.delta[i])), f.py(d.actual_mean[i]));
    predicted.emplace_back(f.px(static_cast<double>(d.delta[i])), f.py(d.predicted[i]));
  }
  svg.polyline(actual, Svg::Style::stroked(kActualColour, 1.5).titled("actual mean logit"));
  svg.polyline(predicted, Svg::Style::stroked(kPredictedColour, 1.5).dashed("6,3").titled("predicted"));
  svg.line(80, 332, 104, 332, Svg::Style::stroked(kActualColour, 2));
  svg.text(110, 336, "actual: mean over query positions of q(t)·k(t−Δ) after RoPE", 11);
  svg.line(80, 352, 104, 352, Svg::Style::stroked(kPredictedColour, 2).dashed("6,3"));
  svg.text(110, 356, "predicted: Σ_f |E q_f||E k_f| cos(ω_f Δ + arg E q_f − arg E k_f)", 11);
  return {"curve_" + name + ".svg", title,
          "Why (" + c.choice.why + "). The solid line is the head's real average logit at each distance, the dashed "
          "line what TriAttention's trigonometric series predicts from the calibrated centres alone. Where they move "
          "together the score ranks keys by distance the way the head does.",
          svg.str()};
}

Figure band_scatter_figure(const ChosenHeadAnalysis& c) {
  const BandScatter& s = c.scatter;
  const std::string name = head_name(c.choice.layer, c.choice.head);
  const std::string title = "Layer " + std::to_string(c.choice.layer) + ", head " + std::to_string(c.choice.head) +
                            ": dominant band " + std::to_string(s.band) + " (ω " + number_text("%.3g", s.omega) + ")";
  Svg svg(660, 380, title);
  svg.text(20, 22, title, 14);
  double m = 1e-12;
  for (const auto* v : {&s.q_raw, &s.k_raw, &s.q_rope, &s.k_rope})
    for (const auto& z : *v) m = std::max({m, std::abs(z.real()), std::abs(z.imag())});
  m *= 1.08;
  auto panel = [&](double left, const std::string& label, const std::vector<std::complex<double>>& q,
                   const std::vector<std::complex<double>>& k) {
    PlotFrame f{left, 50, left + 260, 310, {-m, m, false, "real part"}, {-m, m, false, "imaginary part"}};
    draw_frame(svg, f);
    svg.text((f.left + f.right) / 2, 44, label, 12, "middle");
    svg.line(f.px(0), f.top, f.px(0), f.bottom, Svg::Style::stroked("#999").dashed("2,2"));
    svg.line(f.left, f.py(0), f.right, f.py(0), Svg::Style::stroked("#999").dashed("2,2"));
    for (const auto& z : k) svg.circle(f.px(z.real()), f.py(z.imag()), 1.8, Svg::Style::filled(kPredictedColour).faded(0.55));
    for (const auto& z : q) svg.circle(f.px(z.real()), f.py(z.imag()), 1.8, Svg::Style::filled(kActualColour).faded(0.55));
  };
  panel(70, "pre-RoPE (raw)", s.q_raw, s.k_raw);
  panel(390, "after RoPE (rotated by ω·position)", s.q_rope, s.k_rope);
  svg.circle(80, 362, 4, Svg::Style::filled(kActualColour));
  svg.text(90, 366, "queries", 11);
  svg.circle(160, 362, 4, Svg::Style::filled(kPredictedColour));
  svg.text(170, 366, "keys (KV head " + std::to_string(c.kv_head) + ")", 11);
  svg.text(330, 366, std::to_string(s.q_raw.size()) + " tokens", 11);
  return {"scatter_" + name + ".svg", title,
          "Each dot is one token's band-" + std::to_string(s.band) +
              " component as a complex number. Raw (left), a concentrated head's queries and keys sit in tight "
              "clusters away from the origin; after RoPE (right) the same vectors are spread around circles, which is "
              "why TriAttention takes its statistics before RoPE.",
          svg.str()};
}

std::vector<Figure> report_figures(const AnalysisRun& run) {
  const Analysis& a = run.analysis;
  const int L = run.source.n_layers, H = run.source.n_heads, KV = run.source.n_kv_heads;
  std::vector<double> q, k;
  for (const auto& h : a.query_heads) q.push_back(h.concentration.weighted_R);
  for (const auto& h : a.key_heads) k.push_back(h.concentration.weighted_R);
  std::vector<Figure> out;
  out.push_back(r_heatmap_figure("r_heatmap_query.svg", "Query concentration: weighted R per head",
                                 "Weighted R = Σ_f |E q_f| / Σ_f E|q_f| of every query head (rows: layers, columns: "
                                 "heads). Bright cells (close to 1) are heads whose pre-RoPE queries point the same "
                                 "way on every token: TriAttention's trigonometric term describes them well. Dark "
                                 "cells are diffuse heads, scored mostly by the norm term.",
                                 q, L, H, "query head"));
  out.push_back(r_heatmap_figure("r_heatmap_key.svg", "Key concentration: weighted R per KV head",
                                 "The same for the pre-RoPE keys of every KV head. Concentrated keys make the "
                                 "predicted curve's amplitude |E q_f||E k_f| a good summary of real logits.",
                                 k, L, KV, "KV head"));
  out.push_back(rbar_histogram_figure(a));
  for (const ChosenHeadAnalysis& c : a.chosen) {
    const double rbar = a.query_heads[static_cast<size_t>(c.choice.layer) * H + c.choice.head].reconstruction.rbar;
    out.push_back(distance_curve_figure(c, rbar));
    out.push_back(band_scatter_figure(c));
  }
  return out;
}

}  // namespace triattn
