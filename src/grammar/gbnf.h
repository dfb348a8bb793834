#pragma once
// GBNF, the grammar text llama-server accepts in its `grammar` field, parsed into the IR.
// Supported: rules `name ::= alternatives`, string literals with escapes (\n \r \t \\ \"
// \xHH \uHHHH \UHHHHHHHH), character classes with ranges and negation, `.`, groups, the
// postfixes * + ? {m} {m,} {m,n}, and # comments. Generation starts at the rule `root`.
// Errors name the line and column.
#include <string_view>

#include "grammar/grammar.h"

namespace triattn::grammar {

// Most repetitions one {m,n} may spell out, and most elements a whole grammar may hold:
// a bound keeps a hostile grammar from taking the server's memory.
constexpr uint32_t kMaxRepeat = 10000;
constexpr size_t kMaxElements = 2'000'000;

Grammar parse_gbnf(std::string_view text, std::string_view root = "root");

}  // namespace triattn::grammar
