#pragma once
// The report's verdict in words (what the figures mean for TriAttention on this model): a few
// sentences from the figures, with the thresholds below stated in the
// report, so that a reader who does not know the paper can act on it.
#include <string>
#include <vector>

#include "analyze/analysis_run.h"

namespace triattn {

inline constexpr double kConcentratedR = 0.95;  // the paper's threshold for a concentrated head
inline constexpr double kDiffuseR = 0.5;        // a layer whose mean weighted R is below this is diffuse
inline constexpr double kGoodRbar = 0.8;        // r̄ at or above: the series predicts closely
inline constexpr double kFairRbar = 0.5;        // r̄ at or above: roughly

std::vector<std::string> findings(const AnalysisRun& run);

}  // namespace triattn
