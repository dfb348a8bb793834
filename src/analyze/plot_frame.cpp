#include "analyze/plot_frame.h"

#include <cmath>
#include <cstdio>

namespace triattn {

namespace {

double to_scale(const PlotAxis& a, double v) { return a.log2 ? std::log2(v) : v; }

}  // namespace

double PlotFrame::px(double v) const {
  const double lo = to_scale(x, x.lo), hi = to_scale(x, x.hi);
  return left + (to_scale(x, v) - lo) / (hi - lo) * (right - left);
}

double PlotFrame::py(double v) const {
  const double lo = to_scale(y, y.lo), hi = to_scale(y, y.hi);
  return bottom - (to_scale(y, v) - lo) / (hi - lo) * (bottom - top);
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  std::vector<double> t;
  if (!(hi > lo) || target < 1) return t;
  const double raw = (hi - lo) / target, mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  // Integer multiples of the step (no accumulated rounding: 0.6 stays 3 * 0.2).
  for (double k = std::ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; k += 1) t.push_back(k == 0 ? 0.0 : k * step);
  return t;
}

void pad_range(double& lo, double& hi, double fraction) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 1;
  if (hi <= lo) {
    const double c = lo, w = std::max(std::abs(c) * 0.1, 1e-6);
    lo = c - w, hi = c + w;
    return;
  }
  const double m = (hi - lo) * fraction;
  lo -= m, hi += m;
}

std::string tick_label(double v) {
  char buf[32];
  if (std::abs(v - std::round(v)) < 1e-9 && std::abs(v) < 1e7)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

void draw_frame(Svg& svg, const PlotFrame& f) {
  const Svg::Style grid = Svg::Style::stroked("#e4e4e4"), axis = Svg::Style::stroked("#444");
  std::vector<double> xt, yt;
  if (f.x.log2) {
    for (double v = 1; v <= f.x.hi * (1 + 1e-9); v *= 2)
      if (v >= f.x.lo * (1 - 1e-9)) xt.push_back(v);
  } else {
    xt = nice_ticks(f.x.lo, f.x.hi, 6);
  }
  yt = nice_ticks(f.y.lo, f.y.hi, 5);
  for (double v : xt) {
    const double x = f.px(v);
    svg.line(x, f.top, x, f.bottom, grid);
    svg.line(x, f.bottom, x, f.bottom + 4, axis);
    svg.text(x, f.bottom + 16, tick_label(v), 11, "middle");
  }
  for (double v : yt) {
    const double y = f.py(v);
    svg.line(f.left, y, f.right, y, grid);
    svg.line(f.left - 4, y, f.left, y, axis);
    svg.text(f.left - 7, y + 4, tick_label(v), 11, "end");
  }
  svg.rect(f.left, f.top, f.right - f.left, f.bottom - f.top, axis);
  svg.text((f.left + f.right) / 2, f.bottom + 34, f.x.label, 12, "middle");
  svg.text(f.left - 44, (f.top + f.bottom) / 2, f.y.label, 12, "middle", -90);
}

}  // namespace triattn
