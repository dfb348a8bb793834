#include "eval/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace triattn::eval {

namespace {

constexpr double kWidth = 720, kHeight = 440;
constexpr double kLeft = 70, kRight = 190, kTop = 40, kBottom = 60;  // margins; legend on the right
const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                               "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"};

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

// About five round tick values covering [lo, hi].
std::vector<double> axis_ticks(double lo, double hi) {
  const double span = hi - lo;
  const double raw = span / 5;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> t;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) t.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
  return t;
}

}  // namespace

std::string render_svg(const LinePlot& plot) {
  auto tx = [&](double x) { return plot.log2_x ? std::log2(x) : x; };
  double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
  std::vector<double> xs;
  for (const PlotSeries& s : plot.series)
    for (auto [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y) || (plot.log2_x && x <= 0)) continue;
      xlo = std::min(xlo, tx(x)), xhi = std::max(xhi, tx(x));
      ylo = std::min(ylo, y), yhi = std::max(yhi, y);
      xs.push_back(x);
    }
  for (const PlotReference& r : plot.references)
    if (std::isfinite(r.y)) ylo = std::min(ylo, r.y), yhi = std::max(yhi, r.y);
  if (!(xlo <= xhi)) xlo = 0, xhi = 1;
  if (!(ylo <= yhi)) ylo = 0, yhi = 1;
  if (xhi - xlo < 1e-12) xlo -= 0.5, xhi += 0.5;
  if (yhi - ylo < 1e-12) ylo -= std::max(0.5, std::abs(ylo) * 0.05), yhi += std::max(0.5, std::abs(yhi) * 0.05);
  const double pad = (yhi - ylo) * 0.05;
  ylo -= pad, yhi += pad;
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (tx(x) - xlo) / (xhi - xlo) * pw; };
  auto py = [&](double y) { return kTop + (yhi - y) / (yhi - ylo) * ph; };

  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
    << "\" viewBox=\"0 0 " << kWidth << " " << kHeight << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << kWidth / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" << esc(plot.title)
    << "</text>\n";
  o << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << pw << "\" height=\"" << ph
    << "\" fill=\"none\" stroke=\"#333\"/>\n";
  // y ticks
  for (double v : axis_ticks(ylo, yhi)) {
    o << "<line x1=\"" << kLeft - 4 << "\" x2=\"" << kLeft + pw << "\" y1=\"" << py(v) << "\" y2=\"" << py(v)
      << "\" stroke=\"#ddd\"/>\n<text x=\"" << kLeft - 8 << "\" y=\"" << py(v) + 4 << "\" text-anchor=\"end\">"
      << num(v) << "</text>\n";
  }
  // x ticks: the data's own x values (budgets), else round values
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  if (xs.empty() || xs.size() > 12) {
    xs.clear();
    for (double v : axis_ticks(xlo, xhi)) xs.push_back(plot.log2_x ? std::exp2(v) : v);
  }
  for (double v : xs)
    o << "<line x1=\"" << px(v) << "\" x2=\"" << px(v) << "\" y1=\"" << kTop + ph << "\" y2=\"" << kTop + ph + 4
      << "\" stroke=\"#333\"/>\n<text x=\"" << px(v) << "\" y=\"" << kTop + ph + 18 << "\" text-anchor=\"middle\">"
      << num(v) << "</text>\n";
  o << "<text x=\"" << kLeft + pw / 2 << "\" y=\"" << kHeight - 18 << "\" text-anchor=\"middle\">" << esc(plot.x_label)
    << "</text>\n";
  o << "<text transform=\"translate(18," << kTop + ph / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
    << esc(plot.y_label) << "</text>\n";

  double ly = kTop + 10;
  const double lx = kLeft + pw + 16;
  for (const PlotReference& r : plot.references) {
    if (!std::isfinite(r.y)) continue;
    o << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + pw << "\" y1=\"" << py(r.y) << "\" y2=\"" << py(r.y)
      << "\" stroke=\"black\" stroke-dasharray=\"6,4\"/>\n";
    o << "<line x1=\"" << lx << "\" x2=\"" << lx + 24 << "\" y1=\"" << ly << "\" y2=\"" << ly
      << "\" stroke=\"black\" stroke-dasharray=\"6,4\"/><text x=\"" << lx + 30 << "\" y=\"" << ly + 4 << "\">"
      << esc(r.name) << "</text>\n";
    ly += 18;
  }
  size_t ci = 0;
  for (const PlotSeries& s : plot.series) {
    const char* color = kColors[ci++ % (sizeof kColors / sizeof *kColors)];
    std::vector<std::pair<double, double>> pts;
    for (auto p : s.points)
      if (std::isfinite(p.first) && std::isfinite(p.second) && (!plot.log2_x || p.first > 0)) pts.push_back(p);
    std::sort(pts.begin(), pts.end());
    o << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\" points=\"";
    for (auto [x, y] : pts) o << px(x) << "," << py(y) << " ";
    o << "\"/>\n";
    for (auto [x, y] : pts)
      o << "<circle cx=\"" << px(x) << "\" cy=\"" << py(y) << "\" r=\"3\" fill=\"" << color << "\"/>\n";
    o << "<line x1=\"" << lx << "\" x2=\"" << lx + 24 << "\" y1=\"" << ly << "\" y2=\"" << ly << "\" stroke=\"" << color
      << "\" stroke-width=\"2\"/><text x=\"" << lx + 30 << "\" y=\"" << ly + 4 << "\">" << esc(s.name) << "</text>\n";
    ly += 18;
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace triattn::eval
