// The GBNF parser: what it accepts matches what the grammar says, and every malformed
// grammar is refused with the line and column of the problem.
#include <gtest/gtest.h>

#include "core/error.h"
#include "grammar/gbnf.h"
#include "grammar_test_util.h"

namespace triattn::grammar::test {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_gbnf(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Gbnf, LiteralsAlternativesAndRules) {
  const Grammar g = parse_gbnf(R"(
# a comment
root ::= greeting " " name   # trailing comment
greeting ::= "hello" | "hi"
name ::= [A-Z] [a-z]*
)");
  EXPECT_TRUE(matches(g, "hello World"));
  EXPECT_TRUE(matches(g, "hi Al"));
  EXPECT_TRUE(matches(g, "hi A"));
  EXPECT_FALSE(matches(g, "hey Al"));
  EXPECT_FALSE(matches(g, "hi al"));
  EXPECT_FALSE(matches(g, "hi "));
  EXPECT_TRUE(live_prefix(g, "hel"));
}

TEST(Gbnf, Repetitions) {
  const Grammar g = parse_gbnf(R"(root ::= "a"{2} "b"{1,3} "c"{2,} "d"? ("xy")+)");
  EXPECT_TRUE(matches(g, "aabccxy"));
  EXPECT_TRUE(matches(g, "aabbbcccccdxyxy"));
  EXPECT_FALSE(matches(g, "abccxy"));
  EXPECT_FALSE(matches(g, "aabbbbccxy"));
  EXPECT_FALSE(matches(g, "aabcxy"));
  EXPECT_FALSE(matches(g, "aabccx"));
}

TEST(Gbnf, GroupsNestAcrossLines) {
  const Grammar g = parse_gbnf("root ::= (\n  \"a\" |\n  \"b\" (\"c\" | \"d\")\n)*\n");
  EXPECT_TRUE(matches(g, ""));
  EXPECT_TRUE(matches(g, "abcabd"));
  EXPECT_FALSE(matches(g, "abe"));
}

TEST(Gbnf, EscapesAndUnicodeClasses) {
  const Grammar g = parse_gbnf(R"(root ::= "\x41\u00e9\n\"" [α-ω]+ [^a-z\x00-\x1F]? .)");
  EXPECT_TRUE(matches(g, "Aé\n\"αβγ!€"));
  EXPECT_TRUE(matches(g, "Aé\n\"ω\xF0\x9D\x84\x9E"));  // . takes a 4-byte character
  EXPECT_FALSE(matches(g, "Aé\n\"abc."));
  EXPECT_FALSE(matches(g, "Aé\n\"αqx"));
  // A character is never split: a lone lead byte or an overlong form is not a character.
  EXPECT_FALSE(matches(g, "Aé\n\"α\xCE"));
  EXPECT_FALSE(matches(g, "Aé\n\"α\xC0\xAF"));
  EXPECT_FALSE(matches(g, "Aé\n\"α\xED\xA0\x80"));  // a surrogate
}

TEST(Gbnf, NegatedClassCoversAllOtherCharacters) {
  const Grammar g = parse_gbnf(R"(root ::= [^"]*)");
  EXPECT_TRUE(matches(g, "plain ascii, ü, 中文, \xF4\x8F\xBF\xBF"));
  EXPECT_FALSE(matches(g, "a\"b"));
  EXPECT_FALSE(matches(g, "\xF4\x90\x80\x80"));  // past U+10FFFF
}

TEST(Gbnf, RefusesMalformedGrammarsWithPlace) {
  EXPECT_EQ(error_of(""), "grammar: line 1 column 1: the grammar is empty (it needs at least a 'root ::= ...' rule)");
  EXPECT_NE(error_of("root ::= \"abc").find("unterminated string literal"), std::string::npos);
  EXPECT_NE(error_of("root ::= [a-").find("unterminated character class"), std::string::npos);
  EXPECT_NE(error_of("root ::= (\"a\"").find("expected ')'"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"\n  ) ").find("line 2 column 3"), std::string::npos);
  EXPECT_NE(error_of("root = \"a\"").find("expected '::=' after the rule name 'root'"), std::string::npos);
  EXPECT_NE(error_of("root ::= x").find("rule 'x' is used but never defined"), std::string::npos);
  EXPECT_NE(error_of("start ::= \"a\"").find("no 'root' rule"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"\nroot ::= \"b\"").find("rule 'root' is defined twice"), std::string::npos);
  EXPECT_NE(error_of("root ::= root \"a\" | \"b\"").find("'root' is left-recursive"), std::string::npos);
  EXPECT_NE(error_of("root ::= (\"a\"?)*").find("left-recursive"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{3,2}").find("{m,n} needs m <= n"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{99999}").find("more than 10000"), std::string::npos);
  EXPECT_NE(error_of("root ::= [z-a]").find("goes backwards"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"\\q\"").find("unknown escape '\\q'"), std::string::npos);
  EXPECT_NE(error_of("root ::= * \"a\"").find("'*' follows nothing"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\" ; ").find("unexpected character ';'"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"\\uD800\"").find("not a Unicode scalar value"), std::string::npos);
}

}  // namespace
}  // namespace triattn::grammar::test
