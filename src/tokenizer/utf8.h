#pragma once
// UTF-8 helpers shared by the tokenizers and the stream decoder. Validation follows the
// Unicode standard's well-formed byte sequences (no overlongs, no surrogates, <= U+10FFFF)
// and replaces each "maximal subpart" of an ill-formed sequence with one U+FFFD, which is
// what browsers and Python's errors="replace" do.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace triattn {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

enum class Utf8Scan { Complete, Incomplete, Invalid };

struct Utf8Step {
  Utf8Scan kind;
  size_t len;  // bytes of the character (Complete) or of the ill-formed subpart (Invalid)
};

// Classifies the bytes starting at s[pos]: a complete character, a valid but truncated
// prefix running to the end of s (Incomplete; more bytes may complete it), or ill-formed.
Utf8Step utf8_step(std::string_view s, size_t pos);

// Ill-formed subparts replaced by U+FFFD; a truncated tail is also replaced.
std::string utf8_sanitize(std::string_view s);

// Splits into characters; every ill-formed byte becomes its own one-byte piece so the
// caller can still fall back to byte tokens for it.
std::vector<std::string_view> utf8_split_chars(std::string_view s);

}  // namespace triattn
