#pragma once
// `triattn analyze --compare S1 S2`: do two calibrations agree on the query centres? (the
// paper's Table 3 C: does calibration on code carry over to maths?). Per query head, with
// c = (E q_f)_f the complex centre vector of S1 and c' that of S2:
//   cosine            = Re Σ_f c_f·conj(c'_f) / (‖c‖·‖c'‖)   (1: the same direction; the
//                       trigonometric score term scales with this)
//   relative_distance = ‖c − c'‖ / ‖c‖                       (0: identical, relative to S1)
// beside each file's weighted R.
#include <string>

#include <nlohmann/json.hpp>

#include "calib/stats_file.h"

namespace triattn {

struct HeadCentreDifference {
  int layer = 0, head = 0;
  double cosine = 0, relative_distance = 0;
  double weighted_R_first = 0, weighted_R_second = 0;
};

struct StatsComparison {
  std::vector<HeadCentreDifference> heads;  // layer-major
  double mean_cosine = 0, min_cosine = 0, mean_relative_distance = 0, max_relative_distance = 0;
  int min_cosine_index = -1, max_distance_index = -1;  // into heads
};

// Error naming both files and every field that differs (layers, heads, head_dim,
// architecture, RoPE frequencies): centres of different shapes or rotations cannot be compared.
void check_comparable(const LoadedStats& a, const std::string& path_a, const LoadedStats& b, const std::string& path_b);

StatsComparison compare_stats(const HeadStats& a, const HeadStats& b);

// A fixed-width table, one line per head, then the summary.
std::string comparison_table(const StatsComparison& c, const std::string& path_a, const std::string& path_b);
nlohmann::json comparison_json(const StatsComparison& c, const std::string& path_a, const LoadedStats& a,
                               const std::string& path_b, const LoadedStats& b);

}  // namespace triattn
