#pragma once
// Cuts text at occurrences of special/added tokens before the subword model runs, so that
// "<|user|>" becomes one token instead of being spelled out. Longer tokens are matched first
// (as llama.cpp does), so "<|im_end|>" wins over a shorter token that is its prefix.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace triattn {

// The whitespace an added token's lstrip/rstrip removes beside it (ASCII, as HF tokenizers do).
inline bool is_strip_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

struct SpecialToken {
  std::string text;
  int32_t id = -1;
  bool always = false;  // matched even without parse_special (user-defined / non-special added)
  bool lstrip = false;  // eats whitespace on its left
  bool rstrip = false;  // eats whitespace on its right
};

struct TextFragment {
  int32_t token = -1;     // >= 0: a matched special token; -1: raw text
  std::string_view text;  // raw text (empty for tokens)
  size_t offset = 0;      // where the fragment starts in the original text
};

// `specials` must be sorted longest text first (sort_specials does that).
std::vector<TextFragment> split_special_tokens(std::string_view text,
                                               const std::vector<SpecialToken>& specials,
                                               bool parse_special);
void sort_specials(std::vector<SpecialToken>& specials);

}  // namespace triattn
