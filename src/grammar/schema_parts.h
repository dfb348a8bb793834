#pragma once
// Pieces of the JSON Schema compiler that stand alone: numeric ranges as digit grammars and
// regular expressions (the `pattern` subset) as GBNF expressions over JSON string content.
#include <cstdint>
#include <optional>
#include <string>

namespace triattn::grammar {

struct Bound {
  int64_t value = 0;
  bool exclusive = false;
};

// A GBNF expression for the JSON integers in [lo, hi] (absent = unbounded). Throws Error
// when the range is empty.
std::string integer_range_gbnf(std::optional<Bound> lo, std::optional<Bound> hi);
struct RealBound {
  double value = 0;
  bool exclusive = false;
};
// The same for JSON numbers (a fraction of up to 15 digits, no exponent) between decimal
// bounds (as the shortest decimal that reads back as the double).
std::string number_range_gbnf(std::optional<RealBound> lo, std::optional<RealBound> hi);

// A GBNF expression for the content of a JSON string (between the quotes) that the regular
// expression matches: the ECMA-262 subset of literals, escapes (\d \w \s and their
// negations, \. and friends), classes, `.`, groups, alternation, quantifiers (* + ? {m}
// {m,} {m,n}, lazy or not) and anchors ^ $ at the ends; without anchors the match may sit
// anywhere in the string. `any_char` names the rule of one string character. Throws Error
// naming an unsupported construct.
std::string regex_to_gbnf(const std::string& pattern, const std::string& any_char);

// A GBNF string literal ("...") spelling these bytes.
std::string gbnf_literal(const std::string& bytes);

}  // namespace triattn::grammar
