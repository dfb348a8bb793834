#pragma once
// A small self-contained SVG line chart for the evaluation reports (ppl, agreement, needle
// accuracy against budget): one polyline with markers per series, a dashed horizontal line
// per reference value (full attention), axes with ticks, a legend. No dependencies.
#include <string>
#include <vector>

namespace triattn::eval {

struct PlotSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in x order
};

struct PlotReference {
  std::string name;
  double y = 0;
};

struct LinePlot {
  std::string title, x_label, y_label;
  bool log2_x = false;  // budgets double: equal spacing per doubling
  std::vector<PlotSeries> series;
  std::vector<PlotReference> references;
};

// The SVG document. Non-finite points are skipped; an empty plot still renders its frame.
std::string render_svg(const LinePlot& plot);

}  // namespace triattn::eval
