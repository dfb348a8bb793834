// The math scorer on a fixture of tricky answers (tests/data/math_tricky_answers.jsonl):
// equal answers written differently are accepted, near misses are rejected.
#include <gtest/gtest.h>

#include "eval/boxed_answer.h"
#include "eval/jsonl.h"
#include "eval/math_answer.h"

namespace triattn::eval {
namespace {

const std::string kFixture = std::string(TRIATTN_SOURCE_DIR) + "/tests/data/math_tricky_answers.jsonl";

TEST(EvalMathAnswer, TrickyFixture) {
  const auto records = read_jsonl(kFixture);
  ASSERT_GE(records.size(), 25u);
  int accepted = 0, rejected = 0;
  for (const JsonlRecord& r : records) {
    const std::string reply = r.value.at("reply"), answer = r.value.at("answer");
    const bool want = r.value.at("correct");
    EXPECT_EQ(math_correct(reply, answer), want) << kFixture << ":" << r.line << ": reply " << reply << " vs " << answer
                                                 << " (normalised boxed: "
                                                 << normalize_math_answer(last_boxed(reply).value_or("<none>")) << ")";
    (want ? accepted : rejected)++;
  }
  EXPECT_GE(accepted, 15);
  EXPECT_GE(rejected, 8);
}

TEST(EvalMathAnswer, LastBoxedMatchesBraces) {
  EXPECT_EQ(last_boxed("\\boxed{\\frac{1}{2}} and \\boxed{3}").value(), "3");
  EXPECT_EQ(last_boxed("\\boxed{\\frac{1}{2}}").value(), "\\frac{1}{2}");
  EXPECT_EQ(last_boxed("\\boxed 5$").value(), "5");
  EXPECT_FALSE(last_boxed("no box").has_value());
  EXPECT_FALSE(last_boxed("\\boxed{unclosed").has_value());
}

TEST(EvalMathAnswer, RationalsCompareExactly) {
  EXPECT_TRUE(math_answers_equal("0.125", "\\frac{1}{8}"));
  EXPECT_TRUE(math_answers_equal("-3", "\\frac{-6}{2}"));
  EXPECT_FALSE(math_answers_equal("0.3333333333", "1/3"));
  EXPECT_FALSE(math_answers_equal("2", "-2"));
}

}  // namespace
}  // namespace triattn::eval
