#pragma once
// analysis.json: every figure of the report, machine-readable, so the numbers can be checked
// (tests/reference/analyze_ref.py recomputes them) and compared between models. Undefined
// values (NaN) are written as null. The layout is documented in the README section.
#include <nlohmann/json.hpp>
#include <vector>

#include "analyze/analysis_run.h"
#include "analyze/figures.h"

namespace triattn {

inline constexpr const char* kAnalysisFormatName = "triattn-analysis";
inline constexpr int kAnalysisFormatVersion = 1;

// A double, or null when it is not finite.
nlohmann::json json_number(double v);

nlohmann::json analysis_json(const AnalysisRun& run, const std::vector<Figure>& figures,
                             const std::vector<std::string>& findings);

}  // namespace triattn
