#pragma once
// The output folder of `triattn analyze`: analysis.json, one .svg per figure and index.html
// (which inlines the same SVGs, so it can be opened or mailed on its own). Every file is
// written atomically (calib/atomic_write.h).
#include <string>
#include <vector>

#include "analyze/analysis_run.h"

namespace triattn {

// Writes a text file atomically; Error naming the path on failure.
void write_text_file(const std::string& path, const std::string& text);

// Writes the whole report; returns the paths written (index.html last).
std::vector<std::string> write_analysis_report(const std::string& dir, const AnalysisRun& run);

}  // namespace triattn
