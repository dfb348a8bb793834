// A thinking budget (Anthropic's thinking.budget_tokens): the tracker counts the tokens inside
// "<think>" ... "</think>" wherever the pieces split the markers, and forces the close marker
// once the budget is spent; through generation on bytelm-2k (one token per byte), the reply
// holds exactly the budget's tokens of thinking, then the close marker, then goes on.
#include "engine/thinking_budget.h"

#include <gtest/gtest.h>

#include "engine/generate.h"
#include "engine/sequence.h"
#include "model/model.h"

namespace triattn {
namespace {

ThinkingBudgetSpec spec_of(int64_t tokens, bool open_at_start) {
  ThinkingBudgetSpec s;
  s.tokens = tokens;
  s.open_at_start = open_at_start;
  s.close_ids = {101, 102, 103};
  return s;
}

TEST(ThinkingBudget, CountsOnlyInsideBlocksWhateverThePieces) {
  const ThinkingBudgetSpec s = spec_of(100, false);
  ThinkingBudget b(s);
  for (const char* piece : {"Hi ", "<th", "ink", ">", "a", "b", "</", "think>", "answer"}) b.push(piece);
  EXPECT_EQ(b.thinking_tokens(), 4);  // "a", "b", "</", "think>": the tokens after the open marker
  EXPECT_EQ(b.forced(), -1);
  b.push("<think>x");  // a second block: its tokens count toward the same budget
  b.push("y");
  EXPECT_EQ(b.thinking_tokens(), 5);
}

TEST(ThinkingBudget, ForcesTheCloseMarkerOnceTheBudgetIsSpent) {
  const ThinkingBudgetSpec s = spec_of(2, true);
  ThinkingBudget b(s);
  b.push("one");
  EXPECT_EQ(b.forced(), -1);
  b.push("two");
  std::vector<int32_t> forced;
  while (b.forced() >= 0) {
    forced.push_back(b.forced());
    b.push("x");  // the forced token's text does not matter to the count
  }
  EXPECT_EQ(forced, s.close_ids);
  EXPECT_EQ(b.thinking_tokens(), 2);
  b.push("answer");  // closed: sampling again, nothing counted
  EXPECT_EQ(b.forced(), -1);
  EXPECT_EQ(b.thinking_tokens(), 2);
}

TEST(ThinkingBudget, ZeroClosesABlockAsSoonAsItOpens) {
  const ThinkingBudgetSpec open = spec_of(0, true);
  EXPECT_EQ(ThinkingBudget(open).forced(), 101);  // the prompt opened it
  const ThinkingBudgetSpec shut = spec_of(0, false);
  ThinkingBudget b(shut);
  b.push("text");
  EXPECT_EQ(b.forced(), -1);
  b.push("<think>");
  EXPECT_EQ(b.forced(), 101);
}

TEST(ThinkingBudget, RefusesWhatCannotWork) {
  ThinkingBudgetSpec negative = spec_of(-1, false);
  EXPECT_THROW(ThinkingBudget{negative}, Error);
  ThinkingBudgetSpec no_marker = spec_of(3, false);
  no_marker.close_ids.clear();
  EXPECT_THROW(ThinkingBudget{no_marker}, Error);
}

TEST(ThinkingBudget, GenerationThinksExactlyTheBudgetThenCloses) {
  auto model = Model::load(std::string(TRIATTN_SHARED_DIR) + "/models/bytelm-2k");
  const Tokenizer& tok = model->tokenizer();
  const std::vector<int32_t> prompt = tok.encode("The passkey is 4721. <think>", tok.add_bos_default());
  auto run = [&](std::shared_ptr<const ThinkingBudgetSpec> budget) {
    PolicyFactory f(*model, {});
    Sequence seq(*model, f);
    Forward fwd(*model, nullptr);
    SamplerParams sp;
    sp.temperature = 0;
    Sampler sampler(sp);
    GenerateOptions opt;
    opt.n_predict = 24;
    opt.stop_at_eog = false;
    opt.thinking_budget = std::move(budget);
    return generate(*model, fwd, seq, prompt, opt, sampler);
  };
  auto spec = std::make_shared<ThinkingBudgetSpec>();
  spec->tokens = 5;
  spec->open_at_start = true;
  spec->close_ids = tok.encode("</think>\n\n", false);
  const GenerateResult free = run(nullptr);
  const GenerateResult held = run(spec);
  ASSERT_EQ(held.tokens.size(), 24u);
  // bytelm-2k spells one byte per token: five bytes of thinking, then the marker.
  EXPECT_EQ(held.text.substr(0, 5), free.text.substr(0, 5));
  EXPECT_EQ(held.text.substr(5, 10), "</think>\n\n") << held.text;
  EXPECT_NE(free.text.substr(5, 10), "</think>\n\n") << "the model closed it alone: the test shows nothing";
}

}  // namespace
}  // namespace triattn
