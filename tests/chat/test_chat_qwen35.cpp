// The Qwen3.5 / Qwen3.6 chat templates as the checkpoints ship them (tests/data/chat-templates,
// see SOURCE.md there), rendered to the exact strings their Jinja source defines. Every
// expected string was written by reading the template (all tags strip whitespace with `-`,
// so only the quoted literals reach the output), not by running another renderer.
//
// What the family does differently from Qwen3: message content is trimmed; tools are listed
// as JSON lines in <tools> but calls are XML-ish (<tool_call><function=NAME><parameter=ARG>);
// the generation prompt opens a <think> block (4B and up, 3.6) or closes an empty one (2B
// and down) unless enable_thinking says otherwise; content may be a list with images/videos.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "core/error.h"

namespace triattn {
// Named, so the unity build's other test files (same helper names) do not collide.
namespace qwen35_chat {
namespace {

using ojson = nlohmann::ordered_json;

const char* kThink = "Qwen-Qwen3.5-4B.jinja";    // 4B and larger: thinking by default
const char* kNoThink = "Qwen-Qwen3.5-2B.jinja";  // 2B and smaller: no thinking by default
const char* kQwen36 = "Qwen-Qwen3.6-27B.jinja";  // adds preserve_thinking

std::string qwen35_read_template(const std::string& name) {
  const std::string path = std::string(TRIATTN_SOURCE_DIR) + "/tests/data/chat-templates/" + name;
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);  // missing data fails the test
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string qwen35_render(const std::string& file, const ojson& messages, ChatRenderOptions opt = {}) {
  return ChatTemplate(qwen35_read_template(file)).render(messages, opt);
}

ChatRenderOptions with(const char* key, ojson value) {
  ChatRenderOptions opt;
  opt.extra[key] = std::move(value);
  return opt;
}

void qwen35_expect_raises(const std::string& file, const ojson& messages, const std::string& msg) {
  try {
    qwen35_render(file, messages);
    FAIL() << file << ": expected raise_exception(\"" << msg << "\")";
  } catch (const ChatTemplateRaised& e) {
    EXPECT_EQ(std::string(e.what()), msg);
  }
}

ojson msg(const char* role, ojson content) { return {{"role", role}, {"content", std::move(content)}}; }

// system + user + assistant + user; whitespace around the last user turn is trimmed away.
ojson qwen35_conversation() {
  return ojson::array({msg("system", "You are a helpful assistant."), msg("user", "Hello!"),
                       msg("assistant", "Hi there! How can I help?"), msg("user", "What is 2+2?\n")});
}

const std::string kConversation =
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "<|im_start|>user\nHello!<|im_end|>\n"
    "<|im_start|>assistant\nHi there! How can I help?<|im_end|>\n"
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
    "<|im_start|>assistant\n";
const std::string kOpenThink = "<think>\n";
const std::string kEmptyThink = "<think>\n\n</think>\n\n";

class Qwen35All : public ::testing::TestWithParam<const char*> {};

// The default generation prompt is the one thing the 2B and 4B templates disagree on.
TEST_P(Qwen35All, ConversationWithSystemPrompt) {
  const std::string tail = std::string(GetParam()) == kNoThink ? kEmptyThink : kOpenThink;
  EXPECT_EQ(qwen35_render(GetParam(), qwen35_conversation()), kConversation + tail);
}

TEST_P(Qwen35All, EnableThinkingOverridesTheDefault) {
  EXPECT_EQ(qwen35_render(GetParam(), qwen35_conversation(), with("enable_thinking", false)), kConversation + kEmptyThink);
  EXPECT_EQ(qwen35_render(GetParam(), qwen35_conversation(), with("enable_thinking", true)), kConversation + kOpenThink);
}

TEST_P(Qwen35All, NoSystemPromptAndNoGenerationPrompt) {
  ChatRenderOptions opt;
  opt.add_generation_prompt = false;
  EXPECT_EQ(qwen35_render(GetParam(), ojson::array({msg("user", "  Hi  ")}), opt), "<|im_start|>user\nHi<|im_end|>\n");
}

// Reasoning is shown only for assistant turns after the last real user query; earlier
// ones lose it, whether it came as reasoning_content or inline <think>...</think>.
TEST_P(Qwen35All, ThinkingKeptOnlyAfterLastQuery) {
  ojson m = ojson::array({msg("user", "Hi"), msg("assistant", "<think>\nLet me think.\n</think>\n\nHello!"),
                          msg("user", "Bye"), msg("assistant", "Goodbye.")});
  m[3]["reasoning_content"] = "\nSay bye.\n";
  ChatRenderOptions opt;
  opt.add_generation_prompt = false;
  EXPECT_EQ(qwen35_render(GetParam(), m, opt),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n"
            "<|im_start|>user\nBye<|im_end|>\n"
            "<|im_start|>assistant\n<think>\nSay bye.\n</think>\n\nGoodbye.<|im_end|>\n");
}

// Image and video parts become vision placeholders, counted across messages when
// add_vision_id is set (the count lives in a namespace the macro mutates).
TEST_P(Qwen35All, VisionContentParts) {
  ojson first = ojson::array({{{"type", "image"}, {"image", "a.png"}}, {{"type", "text"}, {"text", "What is this?"}}});
  ojson second = ojson::array({{{"type", "image_url"}, {"image_url", {{"url", "b.png"}}}},
                               {{"type", "video"}, {"video", "c.mp4"}}, {{"type", "text"}, {"text", " And these?"}}});
  ojson m = ojson::array({msg("user", first), msg("assistant", "A cat."), msg("user", second)});
  ChatRenderOptions opt = with("add_vision_id", true);
  opt.add_generation_prompt = false;
  EXPECT_EQ(qwen35_render(GetParam(), m, opt),
            "<|im_start|>user\nPicture 1: <|vision_start|><|image_pad|><|vision_end|>What is this?<|im_end|>\n"
            "<|im_start|>assistant\nA cat.<|im_end|>\n"
            "<|im_start|>user\nPicture 2: <|vision_start|><|image_pad|><|vision_end|>"
            "Video 1: <|vision_start|><|video_pad|><|vision_end|> And these?<|im_end|>\n");
  opt.extra["add_vision_id"] = false;
  EXPECT_EQ(qwen35_render(GetParam(), ojson::array({msg("user", first)}), opt),
            "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>What is this?<|im_end|>\n");
}

TEST_P(Qwen35All, TemplateRejectsWhatItMustReject) {
  qwen35_expect_raises(GetParam(), ojson::array(), "No messages provided.");
  qwen35_expect_raises(GetParam(), ojson::array({msg("system", "s")}), "No user query found in messages.");
  qwen35_expect_raises(GetParam(), ojson::array({msg("user", "a"), msg("system", "s")}),
                "System message must be at the beginning.");
  qwen35_expect_raises(GetParam(), ojson::array({msg("user", "a"), msg("critic", "b")}), "Unexpected message role.");
  qwen35_expect_raises(GetParam(), ojson::array({msg("system", ojson::array({{{"type", "image"}}})), msg("user", "a")}),
                "System message cannot contain images.");
}

ojson qwen35_weather_tool() {
  return ojson::parse(R"({"type": "function", "function": {"name": "get_weather", "description": "Get weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})");
}

const char* kWeatherToolJson =
    R"({"type": "function", "function": {"name": "get_weather", "description": "Get weather", )"
    R"("parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})";

// The fixed instructions that follow the </tools> list.
const std::string kToolInstructions =
    "\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n"
    "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n"
    "<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple lines\n"
    "</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n"
    "- Function calls MUST follow the specified format: an inner <function=...></function> block must be nested "
    "within <tool_call></tool_call> XML tags\n"
    "- Required parameters MUST be specified\n"
    "- You may provide optional reasoning for your function call in natural language BEFORE the function call, "
    "but NOT after\n"
    "- If there is no function call available, answer the question like normal with your current knowledge and "
    "do not tell the user about function calls\n</IMPORTANT>";

ojson call(const char* name, ojson args) {
  return {{"type", "function"}, {"function", {{"name", name}, {"arguments", std::move(args)}}}};
}

// Tools in the system turn (the system prompt after them), one call right after the query
// (so inside an empty think block), its result as a user turn, then the prompt.
TEST_P(Qwen35All, ToolsToolCallAndToolResponse) {
  ChatRenderOptions opt = with("tools", ojson::array({qwen35_weather_tool()}));
  opt.extra["enable_thinking"] = true;
  ojson assistant = msg("assistant", "");
  assistant["tool_calls"] = ojson::array({call("get_weather", {{"city", "Paris"}, {"days", 2}})});
  ojson m = ojson::array({msg("system", "You are a helpful assistant."), msg("user", "Weather in Paris?"), assistant,
                          msg("tool", "{\"temp\": 18}")});
  const std::string expected =
      std::string("<|im_start|>system\n# Tools\n\nYou have access to the following functions:\n\n<tools>\n") +
      kWeatherToolJson + "\n</tools>" + kToolInstructions +
      "\n\nYou are a helpful assistant.<|im_end|>\n"
      "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
      "<|im_start|>assistant\n<think>\n\n</think>\n\n"
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
      "<parameter=days>\n2\n</parameter>\n</function>\n</tool_call><|im_end|>\n"
      "<|im_start|>user\n<tool_response>\n{\"temp\": 18}\n</tool_response><|im_end|>\n"
      "<|im_start|>assistant\n<think>\n";
  EXPECT_EQ(qwen35_render(GetParam(), m, opt), expected);
}

TEST_P(Qwen35All, ToolsWithoutSystemPrompt) {
  ChatRenderOptions opt = with("tools", ojson::array({qwen35_weather_tool()}));
  opt.extra["enable_thinking"] = false;
  EXPECT_EQ(qwen35_render(GetParam(), ojson::array({msg("user", "Hi")}), opt),
            std::string("<|im_start|>system\n# Tools\n\nYou have access to the following functions:\n\n<tools>\n") +
                kWeatherToolJson + "\n</tools>" + kToolInstructions + "<|im_end|>\n" +
                "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n" + kEmptyThink);
}

// Two calls after some text, results in consecutive tool messages (one user turn), then an
// answer, all before the last user query. Object arguments are JSON; the 3.5 templates
// write other non-strings with Python's str() (True), 3.6 with tojson (true).
ojson parallel_calls_history() {
  ojson assistant = msg("assistant", "Let me check.");
  assistant["reasoning_content"] = "Need both.";
  assistant["tool_calls"] = ojson::array(
      {call("get_weather", {{"city", "Paris"}}),
       call("get_weather", {{"city", "Rome"}, {"opts", {{"unit", "C"}}}, {"flag", true}})});
  return ojson::array({msg("user", "Compare Paris and Rome."), assistant, msg("tool", "18"), msg("tool", "21"),
                       msg("assistant", "<think>\nCompared.\n</think>\n\nRome is warmer."), msg("user", "Thanks")});
}

std::string parallel_calls_expected(const std::string& flag, bool preserved) {
  return std::string("<|im_start|>user\nCompare Paris and Rome.<|im_end|>\n<|im_start|>assistant\n") +
         (preserved ? "<think>\nNeed both.\n</think>\n\n" : "") +
         "Let me check.\n\n"
         "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>\n"
         "<tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n"
         "<parameter=opts>\n{\"unit\": \"C\"}\n</parameter>\n<parameter=flag>\n" +
         flag +
         "\n</parameter>\n</function>\n</tool_call><|im_end|>\n"
         "<|im_start|>user\n<tool_response>\n18\n</tool_response>\n<tool_response>\n21\n</tool_response><|im_end|>\n"
         "<|im_start|>assistant\n" +
         (preserved ? "<think>\nCompared.\n</think>\n\n" : "") +
         "Rome is warmer.<|im_end|>\n"
         "<|im_start|>user\nThanks<|im_end|>\n";
}

TEST_P(Qwen35All, ParallelToolCallsAndResultsInHistory) {
  ChatRenderOptions opt;
  opt.add_generation_prompt = false;
  const bool is36 = std::string(GetParam()) == kQwen36;
  EXPECT_EQ(qwen35_render(GetParam(), parallel_calls_history(), opt), parallel_calls_expected(is36 ? "true" : "True", false));
}

INSTANTIATE_TEST_SUITE_P(Qwen35, Qwen35All, ::testing::Values(kThink, kNoThink, kQwen36));

// Only the default generation prompt separates the two 3.5 files.
TEST(ChatTemplatesQwen35, ThinkAndNoThinkDifferOnlyInTheDefault) {
  const ojson m = ojson::array({msg("user", "Hi")});
  EXPECT_EQ(qwen35_render(kThink, m), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n" + kOpenThink);
  EXPECT_EQ(qwen35_render(kNoThink, m), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n" + kEmptyThink);
  EXPECT_EQ(qwen35_render(kQwen36, m), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n" + kOpenThink);
}

// Qwen3.6's preserve_thinking keeps reasoning on every assistant turn; 3.5 ignores it.
TEST(ChatTemplatesQwen35, PreserveThinkingOnlyIn36) {
  ChatRenderOptions opt = with("preserve_thinking", true);
  opt.add_generation_prompt = false;
  EXPECT_EQ(qwen35_render(kQwen36, parallel_calls_history(), opt), parallel_calls_expected("true", true));
  EXPECT_EQ(qwen35_render(kThink, parallel_calls_history(), opt), parallel_calls_expected("True", false));
}

// A turn whose only user messages are tool results (wrapped by a client as user content)
// does not count as a query.
TEST(ChatTemplatesQwen35, ToolResponseAsUserContentIsNotAQuery) {
  ojson m = ojson::array({msg("user", "Go"), msg("assistant", "ok"),
                          msg("user", "<tool_response>\nx\n</tool_response>"), msg("assistant", "done")});
  ChatRenderOptions opt;
  opt.add_generation_prompt = false;
  // Last query is message 0, so both assistant turns (1 and 3) get think blocks.
  EXPECT_EQ(qwen35_render(kThink, m, opt),
            "<|im_start|>user\nGo<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nok<|im_end|>\n"
            "<|im_start|>user\n<tool_response>\nx\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\ndone<|im_end|>\n");
}

}  // namespace
}  // namespace qwen35_chat
}  // namespace triattn
