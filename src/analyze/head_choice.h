#pragma once
// Which query heads get the detailed figures (distance curve, band scatter): the user's
// `--heads L:H,…`, or by default a few spread over the layers plus the extremes of
// concentration, so that one report shows both what works and what does not.
#include <string>
#include <vector>

namespace triattn {

struct HeadChoice {
  int layer = 0, head = 0;
  std::string why;  // "--heads", "first layer", "most concentrated (weighted R 0.98)", ...
};

// "L:H,L:H,…" (0-based, whitespace around items allowed); Error naming the bad item and the
// model's layer and head counts. Duplicates are dropped, the order is kept.
std::vector<HeadChoice> parse_head_list(const std::string& text, int n_layers, int n_heads);

// Head 0 of the first, middle and last layer, then the query heads with the largest and the
// smallest weighted R (weighted_R: [n_layers][n_heads], layer-major; the first on ties; NaN
// heads are skipped). A head picked twice is listed once, with both reasons.
std::vector<HeadChoice> default_heads(const std::vector<double>& weighted_R, int n_layers, int n_heads);

}  // namespace triattn
