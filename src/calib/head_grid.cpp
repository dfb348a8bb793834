#include "calib/head_grid.h"

#include <algorithm>

#include "calib/stats_values.h"
#include "core/error.h"

namespace triattn {

void HeadGrid::add(int layer, int head, HeadQStats s, const std::string& key) {
  if (layer < 0 || head < 0) fail(path_, ": ", format_, " entry ", key, " has a negative layer or head index");
  if (heads_.contains({layer, head})) fail(path_, ": ", format_, " entry ", key, " names layer ", layer, " head ", head, " a second time");
  const std::pair<const char*, const std::vector<float>*> fields[] = {
      {"q_mean_real", &s.re}, {"q_mean_imag", &s.im}, {"q_abs_mean", &s.abs}};
  for (const auto& [name, v] : fields) {
    if (bands_ < 0) bands_ = static_cast<int>(v->size());
    if (static_cast<int>(v->size()) != bands_)
      fail(path_, ": ", format_, " entry ", key, ": ", name, " has ", v->size(), " values, other heads have ", bands_);
  }
  heads_.emplace(std::pair{layer, head}, std::move(s));
}

HeadStats HeadGrid::assemble(int n_layers, int n_heads, int n_kv_heads) const {
  if (heads_.empty() || bands_ <= 0) fail(path_, ": the ", format_, " holds no head statistics");
  int max_l = 0, max_h = 0;
  for (const auto& [lh, _] : heads_) max_l = std::max(max_l, lh.first + 1), max_h = std::max(max_h, lh.second + 1);
  if (n_layers == 0) n_layers = max_l;
  if (n_heads == 0) n_heads = max_h;
  if (max_l > n_layers || max_h > n_heads)
    fail(path_, ": ", format_, " holds statistics for layer ", max_l - 1, " or head ", max_h - 1, ", outside its ",
         n_layers, " layers of ", n_heads, " heads");
  HeadStats s;
  s.n_layers = n_layers;
  s.n_heads = n_heads;
  s.n_kv_heads = n_kv_heads;
  s.head_dim = 2 * bands_;
  for (int l = 0; l < n_layers; ++l)
    for (int h = 0; h < n_heads; ++h) {
      auto it = heads_.find({l, h});
      if (it == heads_.end())
        fail(path_, ": ", format_, " has no statistics for layer ", l, " head ", h,
             " (every query head of every layer is needed)");
      s.q_mean_real.insert(s.q_mean_real.end(), it->second.re.begin(), it->second.re.end());
      s.q_mean_imag.insert(s.q_mean_imag.end(), it->second.im.begin(), it->second.im.end());
      s.q_abs_mean.insert(s.q_abs_mean.end(), it->second.abs.begin(), it->second.abs.end());
    }
  const std::string bad = first_invalid_stats_value(stats_tensor_values(s, {}, {}));
  if (!bad.empty()) fail(path_, ": ", format_, ": ", bad, "; the file is damaged");
  return s;
}

}  // namespace triattn
