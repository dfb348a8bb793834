#pragma once
// The query statistics of the foreign formats arrive one (layer, head) at a time, in whatever
// order the file lists them. This collects them, refuses duplicates and heads of another band
// count, and lays them out as HeadStats once every head of every layer is there: a missing
// head would leave its scores undefined, so it is an error naming the head.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kv/policy.h"

namespace triattn {

struct HeadQStats {
  std::vector<float> re, im, abs;  // bands each
};

class HeadGrid {
 public:
  // `path` starts every message; `format` names the file's format in it ("TRIA v1 file").
  HeadGrid(std::string path, std::string format) : path_(std::move(path)), format_(std::move(format)) {}
  // `key` names the entry in messages ("layer 3 head 1", "l_3_h_1").
  void add(int layer, int head, HeadQStats s, const std::string& key);
  bool empty() const { return heads_.empty(); }
  int bands() const { return bands_; }
  // The grid [0, n_layers) x [0, n_heads), every head present; 0: the largest index + 1.
  // head_dim = 2 * bands; n_kv_heads as given (0: unknown). Values are checked by the rules
  // of calib/stats_values.h.
  HeadStats assemble(int n_layers, int n_heads, int n_kv_heads) const;

 private:
  std::string path_, format_;
  std::map<std::pair<int, int>, HeadQStats> heads_;
  int bands_ = -1;
};

}  // namespace triattn
