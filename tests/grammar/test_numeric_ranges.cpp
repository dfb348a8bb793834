// Numeric bounds against plain comparison: random integer and decimal ranges (inclusive or
// exclusive, one-sided or not), random values written as JSON writes them; the grammar must
// accept exactly the values in range.
#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <random>

#include "grammar/gbnf.h"
#include "grammar/schema_parts.h"
#include "grammar_test_util.h"

namespace triattn::grammar::test {
namespace {

std::string shortest(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
  return std::string(buf, r.ptr);
}

TEST(NumericRanges, IntegersMatchComparison) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int64_t> any(-1200, 1200);
  for (int round = 0; round < 60; ++round) {
    std::optional<Bound> lo, hi;
    if (rng() % 4) lo = Bound{any(rng), rng() % 2 == 0};
    if (rng() % 4) hi = Bound{any(rng), rng() % 2 == 0};
    std::string body;
    try {
      body = integer_range_gbnf(lo, hi);
    } catch (const std::exception&) {
      continue;  // an empty range
    }
    const Grammar g = parse_gbnf("root ::= " + body);
    for (int i = 0; i < 200; ++i) {
      const int64_t v = any(rng) * (i % 10 == 0 ? 1000 : 1);
      const bool in = (!lo || (lo->exclusive ? v > lo->value : v >= lo->value)) &&
                      (!hi || (hi->exclusive ? v < hi->value : v <= hi->value));
      EXPECT_EQ(matches(g, std::to_string(v)), in) << body << " value " << v;
    }
  }
}

TEST(NumericRanges, DecimalsMatchComparison) {
  std::mt19937 rng(5);
  auto value = [&](int digits) {
    const double scale = std::pow(10.0, digits);
    return static_cast<double>(static_cast<int64_t>(rng() % 6001) - 3000) / scale;
  };
  for (int round = 0; round < 60; ++round) {
    std::optional<RealBound> lo, hi;
    if (rng() % 4) lo = RealBound{value(static_cast<int>(rng() % 3)), rng() % 2 == 0};
    if (rng() % 4) hi = RealBound{value(static_cast<int>(rng() % 3)), rng() % 2 == 0};
    std::string body;
    try {
      body = number_range_gbnf(lo, hi);
    } catch (const std::exception&) {
      continue;
    }
    const Grammar g = parse_gbnf("root ::= " + body);
    for (int i = 0; i < 200; ++i) {
      const double v = value(static_cast<int>(rng() % 4));
      if (v == 0 && std::signbit(v)) continue;
      const bool in = (!lo || (lo->exclusive ? v > lo->value : v >= lo->value)) &&
                      (!hi || (hi->exclusive ? v < hi->value : v <= hi->value));
      const std::string text = shortest(v);
      EXPECT_EQ(matches(g, text), in) << body << " value " << text;
      if (text.find('.') == std::string::npos) {
        EXPECT_EQ(matches(g, text + ".0"), in) << body << " value " << text << ".0";
      }
    }
  }
}

}  // namespace
}  // namespace triattn::grammar::test
