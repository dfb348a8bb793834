#pragma once
// Every figure of `triattn analyze`, computed from per-head statistics (the
// centres E q_f, E k_f and mean norms E|q_f|, E|k_f|) and the captured pre-RoPE vectors of the
// input. Pure: no model, no files; run_analysis (analysis_run.h) feeds it, analysis_json.h,
// figures.h and report_html.h present it.
#include <cstdint>
#include <string>
#include <vector>

#include "analyze/band_scatter.h"
#include "analyze/concentration.h"
#include "analyze/dominant_bands.h"
#include "analyze/head_choice.h"
#include "analyze/qk_capture.h"
#include "analyze/reconstruction.h"
#include "kv/policy.h"

namespace triattn {

struct QueryHeadAnalysis {
  int layer = 0, head = 0, kv_head = 0;
  BandConcentration concentration;
  DominantBands dominant;
  Reconstruction reconstruction;
};

struct KeyHeadAnalysis {
  int layer = 0, head = 0;
  BandConcentration concentration;
};

struct ChosenHeadAnalysis {
  HeadChoice choice;
  int kv_head = 0;
  DistanceCurve curve;
  BandScatter scatter;  // of the head's dominant band
};

// Means over the heads of one layer (NaN heads left out).
struct LayerAnalysis {
  int layer = 0;
  double query_weighted_R = 0, key_weighted_R = 0, rbar = 0, norm_term_share = 0;
};

struct Histogram {
  double lo = 0, hi = 0;
  std::vector<int64_t> counts;  // equal bins over [lo, hi]; the last one closed
};

// The histogram of r̄ over query heads: kRbarBins bins over [-1, 1].
inline constexpr int kRbarBins = 20;
Histogram histogram(const std::vector<double>& values, double lo, double hi, int bins);

struct Analysis {
  std::vector<double> omega;                // ω_f per band
  std::vector<QueryHeadAnalysis> query_heads;  // layer-major
  std::vector<KeyHeadAnalysis> key_heads;      // layer-major
  std::vector<LayerAnalysis> layers;
  ConcentrationSummary query_summary, key_summary;
  double rbar_mean = 0;      // over the query heads with a defined r̄
  int rbar_heads = 0;        // how many
  Histogram rbar_histogram;
  double mean_top1_share = 0, mean_topk_share = 0, mean_norm_term_share = 0;
  std::vector<ChosenHeadAnalysis> chosen;
};

struct AnalysisInputs {
  const HeadStats* stats = nullptr;   // q_* and k_* both present, shaped like the capture
  const QkCapture* capture = nullptr;
  std::vector<double> omega;
  std::vector<HeadChoice> heads;      // empty: default_heads()
  int64_t scatter_points = 512;       // tokens shown in each band scatter
};

// Throws Error when the statistics and the capture disagree in shape or key stats are missing.
Analysis analyze_capture(const AnalysisInputs& in);

}  // namespace triattn
