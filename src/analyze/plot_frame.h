#pragma once
// Axes for the report's charts: a pixel box, a linear or log2 scale per axis, tick marks at
// round values, grid lines and axis labels. Figures draw their data through px()/py().
#include <string>
#include <vector>

#include "analyze/svg.h"

namespace triattn {

struct PlotAxis {
  double lo = 0, hi = 1;
  bool log2 = false;  // ticks at powers of two; lo must be > 0
  std::string label;
};

struct PlotFrame {
  double left = 0, top = 0, right = 0, bottom = 0;  // pixel box of the plotting area
  PlotAxis x, y;
  double px(double v) const;
  double py(double v) const;
};

// About `target` round tick values covering [lo, hi] (steps of 1, 2 or 5 times a power of ten).
std::vector<double> nice_ticks(double lo, double hi, int target);
// Widens [lo, hi] to a non-empty range with a small margin (for data-driven axes).
void pad_range(double& lo, double& hi, double fraction = 0.05);
// A tick label: integers plainly, others with up to 3 significant digits.
std::string tick_label(double v);

// Frame, grid, ticks and labels.
void draw_frame(Svg& svg, const PlotFrame& f);

}  // namespace triattn
