#include "analyze/head_choice.h"

#include <cmath>
#include <cstdio>
#include <string_view>

#include "core/error.h"

namespace triattn {

namespace {

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

// A whole non-negative decimal number, or -1.
long parse_index(const std::string& s) {
  if (s.empty() || s.size() > 9) return -1;
  for (char c : s)
    if (c < '0' || c > '9') return -1;
  return std::stol(s);
}

void add(std::vector<HeadChoice>& out, int layer, int head, const std::string& why) {
  for (HeadChoice& h : out)
    if (h.layer == layer && h.head == head) {
      if (h.why != why) h.why += ", " + why;
      return;
    }
  out.push_back({layer, head, why});
}

}  // namespace

std::vector<HeadChoice> parse_head_list(const std::string& text, int n_layers, int n_heads) {
  const std::string shape = "the model has " + std::to_string(n_layers) + " layers (0-" + std::to_string(n_layers - 1) +
                            ") and " + std::to_string(n_heads) + " query heads per layer (0-" +
                            std::to_string(n_heads - 1) + ")";
  std::vector<HeadChoice> out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string item = trim(std::string_view(text).substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    const size_t colon = item.find(':');
    const long layer = colon == std::string::npos ? -1 : parse_index(trim(item.substr(0, colon)));
    const long head = colon == std::string::npos ? -1 : parse_index(trim(item.substr(colon + 1)));
    if (layer < 0 || head < 0)
      fail("--heads: '", item, "' is not LAYER:HEAD (e.g. --heads 0:1,1:3; 0-based)");
    if (layer >= n_layers) fail("--heads: '", item, "': layer ", layer, " does not exist; ", shape);
    if (head >= n_heads) fail("--heads: '", item, "': head ", head, " does not exist; ", shape);
    add(out, static_cast<int>(layer), static_cast<int>(head), "--heads");
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::vector<HeadChoice> default_heads(const std::vector<double>& weighted_R, int n_layers, int n_heads) {
  if (weighted_R.size() != static_cast<size_t>(n_layers) * n_heads) fail("analyze: weighted R of the wrong size");
  std::vector<HeadChoice> out;
  add(out, 0, 0, "first layer");
  add(out, n_layers / 2, 0, "middle layer");
  add(out, n_layers - 1, 0, "last layer");
  int best = -1, worst = -1;
  for (int i = 0; i < static_cast<int>(weighted_R.size()); ++i) {
    if (std::isnan(weighted_R[i])) continue;
    if (best < 0 || weighted_R[i] > weighted_R[best]) best = i;
    if (worst < 0 || weighted_R[i] < weighted_R[worst]) worst = i;
  }
  auto why = [&](const char* what, int i) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s (weighted R %.3f)", what, weighted_R[i]);
    return std::string(buf);
  };
  if (best >= 0) add(out, best / n_heads, best % n_heads, why("most concentrated", best));
  if (worst >= 0) add(out, worst / n_heads, worst % n_heads, why("least concentrated", worst));
  return out;
}

}  // namespace triattn
