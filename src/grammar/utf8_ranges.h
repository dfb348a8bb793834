#pragma once
// Code point ranges as UTF-8 byte patterns: every code point in [lo, hi] (surrogates
// excluded) is spelled by exactly one pattern, a sequence of byte ranges. This is how a
// character class becomes byte-level terminals.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace triattn::grammar {

using BytePattern = std::vector<std::pair<uint8_t, uint8_t>>;  // one byte range per position

std::vector<BytePattern> utf8_patterns(uint32_t lo, uint32_t hi);

// Appends the UTF-8 encoding of one code point (<= 0x10FFFF).
void append_utf8(std::string& out, uint32_t cp);

// Inclusive code point ranges, and the code points (up to 0x10FFFF) none of them holds: a
// negated character class.
using CodePointRanges = std::vector<std::pair<uint32_t, uint32_t>>;
CodePointRanges complement(CodePointRanges r);

}  // namespace triattn::grammar
