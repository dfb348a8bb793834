// Code point ranges as UTF-8 patterns: every code point of a range is spelled by exactly one
// pattern, and nothing outside the range by any.
#include <gtest/gtest.h>

#include <random>

#include "grammar/utf8_ranges.h"

namespace triattn::grammar::test {
namespace {

int matching_patterns(const std::vector<BytePattern>& ps, const std::string& s) {
  int n = 0;
  for (const BytePattern& p : ps) {
    if (p.size() != s.size()) continue;
    bool ok = true;
    for (size_t i = 0; i < s.size(); ++i) {
      const uint8_t b = static_cast<uint8_t>(s[i]);
      ok = ok && b >= p[i].first && b <= p[i].second;
    }
    n += ok;
  }
  return n;
}

TEST(Utf8Ranges, EachCodePointOncePatternsExact) {
  std::mt19937 rng(7);
  const std::pair<uint32_t, uint32_t> ranges[] = {{0, 0x10FFFF}, {0x80, 0x7FF}, {0x7F0, 0x812}, {0x3B1, 0x3C9},
                                                  {0xD000, 0xE100}, {0xFFF0, 0x10010}, {0x1F600, 0x1F64F}};
  for (auto [lo, hi] : ranges) {
    const auto ps = utf8_patterns(lo, hi);
    std::uniform_int_distribution<uint32_t> any(0, 0x10FFFF);
    for (int i = 0; i < 3000; ++i) {
      uint32_t cp = i < 1000 ? lo + static_cast<uint32_t>(i) : any(rng);
      if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) continue;
      std::string s;
      append_utf8(s, cp);
      const bool inside = cp >= lo && cp <= hi;
      EXPECT_EQ(matching_patterns(ps, s), inside ? 1 : 0) << std::hex << "cp " << cp << " range " << lo << "-" << hi;
    }
  }
}

}  // namespace
}  // namespace triattn::grammar::test
