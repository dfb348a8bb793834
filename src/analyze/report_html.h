#pragma once
// index.html of `triattn analyze`: one self-contained page (inline CSS, the figures' SVG
// inlined, no scripts, nothing fetched) that states the definitions, the model's figures, the
// verdict in words and every figure with a caption saying how to read it.
#include <string>
#include <vector>

#include "analyze/analysis_run.h"
#include "analyze/figures.h"

namespace triattn {

// Term and definition, in report order (also what the README section explains).
struct Definition {
  std::string term, text;
};
const std::vector<Definition>& analysis_definitions();

std::string report_html(const AnalysisRun& run, const std::vector<Figure>& figures,
                        const std::vector<std::string>& findings);

}  // namespace triattn
