#include "tokenizer/special_split.h"

#include <algorithm>

namespace triattn {

void sort_specials(std::vector<SpecialToken>& specials) {
  std::stable_sort(specials.begin(), specials.end(),
                   [](const SpecialToken& a, const SpecialToken& b) {
                     return a.text.size() > b.text.size();
                   });
}

std::vector<TextFragment> split_special_tokens(std::string_view text,
                                               const std::vector<SpecialToken>& specials,
                                               bool parse_special) {
  std::vector<TextFragment> frags;
  if (text.empty()) return frags;
  frags.push_back({-1, text, 0});
  std::vector<TextFragment> next;
  for (const SpecialToken& sp : specials) {
    if (sp.text.empty() || (!parse_special && !sp.always)) continue;
    next.clear();
    for (const TextFragment& f : frags) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      size_t start = 0;
      for (;;) {
        const size_t hit = f.text.find(sp.text, start);
        if (hit == std::string_view::npos) break;
        size_t left_end = hit;
        if (sp.lstrip) {
          while (left_end > start && is_strip_space(f.text[left_end - 1])) --left_end;
        }
        if (left_end > start) next.push_back({-1, f.text.substr(start, left_end - start), f.offset + start});
        next.push_back({sp.id, {}, f.offset + hit});
        start = hit + sp.text.size();
        if (sp.rstrip) {
          while (start < f.text.size() && is_strip_space(f.text[start])) ++start;
        }
      }
      if (start < f.text.size()) next.push_back({-1, f.text.substr(start), f.offset + start});
    }
    frags.swap(next);
  }
  return frags;
}

}  // namespace triattn
