#pragma once
// The report's figures as standalone SVG documents: R heat maps (layers × heads,
// queries and keys), the histogram of r̄, and for each chosen head the predicted vs actual
// logit-vs-distance curve and the dominant band's scatter, raw and after RoPE.
#include <string>
#include <vector>

#include "analyze/analysis_run.h"

namespace triattn {

struct Figure {
  std::string file;     // "r_heatmap_query.svg": written beside index.html
  std::string title;
  std::string caption;  // what it shows and how to read it (HTML-escaped by the report)
  std::string svg;      // the complete <svg> element
};

// RGB hex colour for a value in [0, 1] (a dark-to-bright sequential map; grey for NaN).
std::string sequential_colour(double v);

Figure r_heatmap_figure(const std::string& file, const std::string& title, const std::string& caption,
                        const std::vector<double>& values, int n_layers, int n_heads, const std::string& head_label);
Figure rbar_histogram_figure(const Analysis& a);
Figure distance_curve_figure(const ChosenHeadAnalysis& c, double rbar);
Figure band_scatter_figure(const ChosenHeadAnalysis& c);

// All figures of a run, in report order.
std::vector<Figure> report_figures(const AnalysisRun& run);

}  // namespace triattn
