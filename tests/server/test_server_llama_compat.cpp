// What clients written for llama-server rely on beyond the OpenAI API: the sampling flags as
// the defaults of requests that name no value, POST /apply-template, tools on a model without
// a chat template (ChatML with <tool_call>), an assistant's earlier reasoning_content in the
// prompt. (scripts/llama_server_tests.sh runs llama.cpp's own suites against both servers.)
#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "chat/tool_call_syntax.h"
#include "server_test_fixture.h"

namespace triattn::server {
namespace {

using json = nlohmann::json;
using ServerTest = test::ServerTest;

TEST_F(ServerTest, SamplingFlagsAreTheDefaultsOfRequestsThatNameNone) {
  ServerOptions o;
  o.defaults.sampling.temperature = 0;  // --temp 0
  o.defaults.seed = 7;                  // --seed 7
  auto s = start(o);
  const auto r = post(*s, "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 12}});
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  EXPECT_EQ(j["choices"][0]["text"], alone(ids("Once upon a time"), 12));
  EXPECT_EQ(j["seed"], 7);
  // A request's own fields win.
  const auto own = post(*s, "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 12}, {"seed", 3},
                                                {"temperature", 1.0}});
  ASSERT_EQ(own->status, 200) << own->body;
  EXPECT_EQ(json::parse(own->body)["seed"], 3);

  // Without the flags: OpenAI's defaults (temperature 1), a fresh seed per request.
  auto plain = start();
  const auto a = json::parse(post(*plain, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 4}})->body);
  const auto b = json::parse(post(*plain, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 4}})->body);
  EXPECT_NE(a["seed"], b["seed"]);
}

TEST_F(ServerTest, ApplyTemplateRendersWhatAChatWouldFeed) {
  auto s = start();
  const json msgs = json::array({{{"role", "user"}, {"content", "Hello"}}});
  const auto r = post(*s, "/apply-template", {{"messages", msgs}});
  ASSERT_EQ(r->status, 200) << r->body;
  // The model has no template: ChatML.
  EXPECT_EQ(json::parse(r->body)["prompt"], "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n");
  // The body is checked as a chat completion's.
  const auto bad = post(*s, "/apply-template", {{"messages", json::array()}});
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(json::parse(bad->body)["error"]["param"], "messages") << bad->body;
  const auto unknown = post(*s, "/apply-template", {{"messages", msgs}, {"frobnicate", 1}});
  EXPECT_EQ(unknown->status, 400) << unknown->body;
  // The API key guards it like the completions.
  ServerOptions keyed;
  keyed.api_key = "k";
  auto k = start(keyed);
  EXPECT_EQ(post(*k, "/apply-template", {{"messages", msgs}})->status, 401);
  EXPECT_EQ(post(*k, "/apply-template", {{"messages", msgs}}, "k")->status, 200);
}

TEST_F(ServerTest, AModelWithoutATemplateTakesToolsAsToolCallTags) {
  auto s = start();
  const json weather = {{"type", "function"},
                        {"function", {{"name", "get_weather"}, {"parameters", {{"type", "object"}}}}}};
  const json msgs = json::array(
      {{{"role", "system"}, {"content", "Be brief."}},
       {{"role", "user"}, {"content", "Weather in Paris?"}},
       {{"role", "assistant"},
        {"content", nullptr},
        {"tool_calls", json::array({{{"id", "c1"},
                                     {"type", "function"},
                                     {"function", {{"name", "get_weather"}, {"arguments", "{\"city\":\"Paris\"}"}}}}})}},
       {{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "sunny"}}});
  const auto r = post(*s, "/apply-template", {{"messages", msgs}, {"tools", json::array({weather})}});
  ASSERT_EQ(r->status, 200) << r->body;
  const std::string prompt = json::parse(r->body)["prompt"];
  // The system message opens the tools' system turn; the call and its result are in the history.
  EXPECT_EQ(prompt.rfind("<|im_start|>system\nBe brief.\n\n# Tools\n", 0), 0u) << prompt;
  const size_t tools = prompt.find("<tools>\n{"), tools_end = prompt.find("}\n</tools>");
  ASSERT_LT(tools, tools_end) << prompt;
  EXPECT_EQ(json::parse(prompt.substr(tools + 8, tools_end + 1 - tools - 8)), weather) << prompt;
  EXPECT_NE(prompt.find("<|im_start|>assistant\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                        "{\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n"),
            std::string::npos)
      << prompt;
  EXPECT_NE(prompt.find("<|im_start|>user\n<tool_response>\nsunny\n</tool_response><|im_end|>\n"
                        "<|im_start|>assistant\n"),
            std::string::npos)
      << prompt;
  EXPECT_EQ(prompt.find("Be brief.<|im_end|>"), std::string::npos) << "the system message twice: " << prompt;
  // And the server reads calls back in that syntax.
  EXPECT_EQ(tool_syntax_of_template(chatml_template_source()), ToolSyntax::Hermes);
  // A chat with tools is answered (the model may or may not call).
  const auto chat = post(*s, "/v1/chat/completions",
                         {{"messages", json::array({msgs[1]})}, {"tools", json::array({weather})}, {"max_tokens", 8}});
  EXPECT_EQ(chat->status, 200) << chat->body;
}

TEST_F(ServerTest, AnAssistantsEarlierReasoningReachesTheTemplate) {
  ServerOptions o;
  o.chat.template_path = std::string(TRIATTN_SHARED_DIR) + "/chat-templates/Qwen-Qwen3-0.6B.jinja";
  auto s = start(o);
  const json msgs = json::array({{{"role", "user"}, {"content", "2+2?"}},
                                 {{"role", "assistant"}, {"content", "4"}, {"reasoning_content", "Two and two."}},
                                 {{"role", "user"}, {"content", "And 3+3?"}},
                                 {{"role", "assistant"}, {"content", "6"}, {"reasoning_content", "Three and three."}}});
  const auto r = post(*s, "/apply-template", {{"messages", msgs}});
  ASSERT_EQ(r->status, 200) << r->body;
  const std::string prompt = json::parse(r->body)["prompt"];
  // Qwen3's template shows the reasoning of the turns after the last user message only.
  EXPECT_NE(prompt.find("<think>\nThree and three.\n</think>\n\n6"), std::string::npos) << prompt;
  EXPECT_EQ(prompt.find("Two and two."), std::string::npos) << prompt;

  json wrong = msgs;
  wrong[0]["reasoning_content"] = "user thoughts";
  const auto bad = post(*s, "/apply-template", {{"messages", wrong}});
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("messages[0].reasoning_content"), std::string::npos) << bad->body;
}

}  // namespace
}  // namespace triattn::server
