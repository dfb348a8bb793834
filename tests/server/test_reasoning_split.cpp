// <think> … </think> split from the answer over streamed pieces, however the pieces cut the
// tags; a prompt that opens <think> starts the reply inside the reasoning.
#include "server/reasoning_split.h"

#include <gtest/gtest.h>

namespace triattn::server {
namespace {

ReasoningSplit::Out run(const std::string& text, size_t step, bool enabled = true, bool inside = false) {
  ReasoningSplit s(enabled, inside);
  ReasoningSplit::Out all;
  for (size_t i = 0; i < text.size(); i += step) {
    const auto o = s.push(text.substr(i, step));
    all.reasoning += o.reasoning;
    all.content += o.content;
  }
  const auto o = s.flush();
  return {all.reasoning + o.reasoning, all.content + o.content};
}

TEST(ReasoningSplit, ThinkBlockIsReasoningWhateverThePieces) {
  const std::string text = "\n<think>\nLet me count: 2 + 2.\n</think>\n\nIt is 4.";
  for (size_t step = 1; step <= text.size(); ++step) {
    const auto o = run(text, step);
    EXPECT_EQ(o.reasoning, "\nLet me count: 2 + 2.\n") << step;
    EXPECT_EQ(o.content, "It is 4.") << step;
  }
}

TEST(ReasoningSplit, NoThinkBlockIsAllContent) {
  for (size_t step : {1, 3, 100}) {
    EXPECT_EQ(run("Hello <think> later is text", step).content, "Hello <think> later is text");
    EXPECT_EQ(run("<thinking is not the tag", step).content, "<thinking is not the tag");
    EXPECT_EQ(run("  <thi", step).content, "  <thi");  // a reply that ends inside a maybe-tag
  }
}

TEST(ReasoningSplit, PromptThatOpensThinkStartsInside) {
  EXPECT_TRUE(ReasoningSplit::prompt_opens_reasoning("<|Assistant|><think>\n"));
  EXPECT_FALSE(ReasoningSplit::prompt_opens_reasoning("<|im_start|>assistant\n"));
  const auto o = run("weighing it</think>Yes.", 2, true, true);
  EXPECT_EQ(o.reasoning, "weighing it");
  EXPECT_EQ(o.content, "Yes.");
  const auto unfinished = run("still thinking </thi", 4, true, true);
  EXPECT_EQ(unfinished.reasoning, "still thinking </thi");
  EXPECT_EQ(unfinished.content, "");
}

TEST(ReasoningSplit, DisabledKeepsEverythingInContent) {
  const auto o = run("<think>x</think>y", 3, false);
  EXPECT_EQ(o.content, "<think>x</think>y");
  EXPECT_EQ(o.reasoning, "");
}

// gpt-oss's harmony replies: the analysis channel is reasoning, the final channel content,
// the framing tokens neither, whatever the pieces cut.
TEST(ReasoningSplit, HarmonyAnalysisIsReasoningFinalIsContent) {
  const std::string text =
      "<|channel|>analysis<|message|>User asks 2+2. Answer 4.<|end|>"
      "<|start|>assistant<|channel|>final<|message|>It is 4.<|return|>";
  for (size_t step = 1; step <= text.size(); ++step) {
    const auto o = run(text, step);
    EXPECT_EQ(o.reasoning, "User asks 2+2. Answer 4.") << step;
    EXPECT_EQ(o.content, "It is 4.") << step;
  }
  // Generation stops at <|return|> (an end-of-generation token, not decoded): same split.
  const auto stopped = run("<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|>ok", 3);
  EXPECT_EQ(stopped.reasoning, "think");
  EXPECT_EQ(stopped.content, "ok");
  // Still in the analysis when the reply ends (the token limit): all of it is reasoning.
  const auto cut = run("<|channel|>analysis<|message|>half a thou<|e", 5);
  EXPECT_EQ(cut.reasoning, "half a thou<|e");
  EXPECT_EQ(cut.content, "");
  // Another channel (a tool call's commentary, with its header attributes) is content.
  const auto tool = run("<|channel|>commentary to=functions.get <|constrain|>json<|message|>{\"x\":1}<|call|>", 4);
  EXPECT_EQ(tool.reasoning, "");
  EXPECT_EQ(tool.content, "{\"x\":1}");
  // Disabled: every byte is content.
  EXPECT_EQ(run(text, 7, false).content, text);
  // Text that only looks like the start of a channel tag is content.
  EXPECT_EQ(run("<|chan is not a tag", 2).content, "<|chan is not a tag");
}

}  // namespace
}  // namespace triattn::server
