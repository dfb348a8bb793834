#include "grammar/utf8_ranges.h"

#include <algorithm>
#include <string>

namespace triattn::grammar {

namespace {

std::vector<uint8_t> utf8_bytes(uint32_t cp) {
  std::string s;
  append_utf8(s, cp);
  return {s.begin(), s.end()};
}

// Encodings of one length are ordered as their code points, and every continuation byte
// ranges over 80..BF, so [lo, hi] of one length is the lexicographic range [L, H] of byte
// strings: split at the first differing byte into (L's prefix, rest >= L), the full middle,
// and (H's prefix, rest <= H).
void lex_range(const std::vector<uint8_t>& L, const std::vector<uint8_t>& H, size_t i, BytePattern prefix,
               std::vector<BytePattern>& out) {
  const size_t n = L.size();
  if (i == n - 1) {
    prefix.push_back({L[i], H[i]});
    out.push_back(prefix);
    return;
  }
  if (L[i] == H[i]) {
    prefix.push_back({L[i], L[i]});
    lex_range(L, H, i + 1, prefix, out);
    return;
  }
  const bool l_min = std::all_of(L.begin() + static_cast<long>(i) + 1, L.end(), [](uint8_t b) { return b == 0x80; });
  const bool h_max = std::all_of(H.begin() + static_cast<long>(i) + 1, H.end(), [](uint8_t b) { return b == 0xBF; });
  auto full = [&](uint8_t a, uint8_t b) {
    BytePattern p = prefix;
    p.push_back({a, b});
    for (size_t k = i + 1; k < n; ++k) p.push_back({0x80, 0xBF});
    out.push_back(p);
  };
  uint8_t lo = L[i], hi = H[i];
  if (!l_min) {
    std::vector<uint8_t> top(L);
    std::fill(top.begin() + static_cast<long>(i) + 1, top.end(), 0xBF);
    BytePattern p = prefix;
    p.push_back({L[i], L[i]});
    lex_range(L, top, i + 1, p, out);
    ++lo;
  }
  if (!h_max) --hi;
  if (lo <= hi && (l_min || lo > L[i]) && (h_max || hi < H[i])) full(lo, hi);
  if (!h_max) {
    std::vector<uint8_t> bottom(H);
    std::fill(bottom.begin() + static_cast<long>(i) + 1, bottom.end(), 0x80);
    BytePattern p = prefix;
    p.push_back({H[i], H[i]});
    lex_range(bottom, H, i + 1, p, out);
  }
}

}  // namespace

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::vector<BytePattern> utf8_patterns(uint32_t lo, uint32_t hi) {
  std::vector<BytePattern> out;
  hi = std::min<uint32_t>(hi, 0x10FFFF);
  // Split at the encoded-length boundaries and around the surrogates.
  const std::pair<uint32_t, uint32_t> pieces[] = {
      {0, 0x7F}, {0x80, 0x7FF}, {0x800, 0xD7FF}, {0xE000, 0xFFFF}, {0x10000, 0x10FFFF}};
  for (auto [a, b] : pieces) {
    const uint32_t l = std::max(lo, a), h = std::min(hi, b);
    if (l > h) continue;
    lex_range(utf8_bytes(l), utf8_bytes(h), 0, {}, out);
  }
  return out;
}

CodePointRanges complement(CodePointRanges r) {
  std::sort(r.begin(), r.end());
  CodePointRanges out;
  uint32_t next = 0;
  for (auto [a, b] : r) {
    if (a > next) out.push_back({next, a - 1});
    next = std::max(next, b + 1);
  }
  if (next <= 0x10FFFF) out.push_back({next, 0x10FFFF});
  return out;
}

}  // namespace triattn::grammar
