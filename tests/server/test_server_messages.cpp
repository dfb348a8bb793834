// Anthropic's Messages API end to end: the message object, its stream of named events in
// Anthropic's order (deltas adding up to the text), system prompts, stop sequences, an
// assistant prefill, thinking blocks, count_tokens, and errors in Anthropic's shape.
#include <gtest/gtest.h>
#include <httplib.h>

#include <fstream>

#include "server_test_fixture.h"

namespace triattn::server {
namespace {

using json = nlohmann::json;
using ServerTest = test::ServerTest;
using test::kModel;

json messages_user(const std::string& text) { return json::array({{{"role", "user"}, {"content", text}}}); }

// The same conversation through chat completions, greedy.
std::string messages_chat_text(Server& s, const json& messages, int max_tokens) {
  httplib::Client c("127.0.0.1", s.port());
  c.set_read_timeout(60, 0);
  const json body = {{"messages", messages}, {"max_tokens", max_tokens}, {"temperature", 0}};
  const auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  return json::parse(r->body)["choices"][0]["message"]["content"];
}

TEST_F(ServerTest, MessagesAnswerLikeChatWithAnthropicsObject) {
  auto s = start();
  const auto r = post(*s, "/v1/messages", {{"model", "any"}, {"messages", messages_user("Tell me a story")},
                                           {"max_tokens", 20}, {"temperature", 0}});
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  EXPECT_EQ(j["type"], "message");
  EXPECT_EQ(j["role"], "assistant");
  EXPECT_EQ(j["id"].get<std::string>().rfind("msg_", 0), 0u);
  EXPECT_EQ(j["stop_reason"], "max_tokens");
  EXPECT_TRUE(j["stop_sequence"].is_null());
  ASSERT_EQ(j["content"].size(), 1u);
  EXPECT_EQ(j["content"][0]["type"], "text");
  EXPECT_EQ(j["content"][0]["text"], messages_chat_text(*s, messages_user("Tell me a story"), 20));
  EXPECT_EQ(j["usage"]["output_tokens"], 20);
  const auto count = post(*s, "/v1/messages/count_tokens", {{"model", "any"}, {"messages", messages_user("Tell me a story")}});
  ASSERT_EQ(count->status, 200) << count->body;
  EXPECT_EQ(json::parse(count->body)["input_tokens"], j["usage"]["input_tokens"]);

  // system as a string or as text blocks is the chat's system message.
  const json with_system = json::array({{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi"}}});
  const std::string expected = messages_chat_text(*s, with_system, 8);
  for (const json& system : {json("Be brief."), json::array({{{"type", "text"}, {"text", "Be brief."}}})}) {
    const json m = json::parse(post(*s, "/v1/messages", {{"system", system},
                                                         {"messages", json::array({{{"role", "user"},
                                                                                    {"content", json::array({{{"type", "text"}, {"text", "Hi"}}})}}})},
                                                         {"max_tokens", 8},
                                                         {"temperature", 0}})->body);
    EXPECT_EQ(m["content"][0]["text"], expected) << m;
  }
}

TEST_F(ServerTest, MessagesStreamAnthropicsEventsInOrder) {
  auto s = start();
  const json body = {{"messages", messages_user("Tell me a story")}, {"max_tokens", 20}, {"temperature", 0}, {"stream", true}};
  const auto r = post(*s, "/v1/messages", body);
  ASSERT_EQ(r->status, 200) << r->body;
  const auto ev = ServerTest::named_events(r->body);
  std::vector<std::string> names;
  std::string text;
  for (const auto& e : ev) {
    EXPECT_EQ(e.data["type"], e.name);
    if (e.name == "content_block_delta") {
      EXPECT_EQ(e.data["delta"]["type"], "text_delta");
      text += e.data["delta"]["text"].get<std::string>();
      if (names.back() == e.name) continue;
    }
    names.push_back(e.name);
  }
  const std::vector<std::string> expected = {"message_start",       "content_block_start", "content_block_delta",
                                             "content_block_stop",  "message_delta",       "message_stop"};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(text, messages_chat_text(*s, messages_user("Tell me a story"), 20));
  EXPECT_EQ(ev[0].data["message"]["role"], "assistant");
  EXPECT_EQ(ev[ev.size() - 2].data["delta"]["stop_reason"], "max_tokens");
  EXPECT_EQ(ev[ev.size() - 2].data["usage"]["output_tokens"], 20);
}

TEST_F(ServerTest, MessagesStopSequencesAndPrefill) {
  auto s = start();
  const std::string full = messages_chat_text(*s, messages_user("Tell me a story"), 30);
  const std::string stop = full.substr(20, 4);
  const std::string before = full.substr(0, full.find(stop));
  for (bool stream : {false, true}) {
    const auto r = post(*s, "/v1/messages", {{"messages", messages_user("Tell me a story")}, {"max_tokens", 30},
                                             {"temperature", 0}, {"stop_sequences", json::array({stop})}, {"stream", stream}});
    ASSERT_EQ(r->status, 200) << r->body;
    if (!stream) {
      const json j = json::parse(r->body);
      EXPECT_EQ(j["content"][0]["text"], before);
      EXPECT_EQ(j["stop_reason"], "stop_sequence");
      EXPECT_EQ(j["stop_sequence"], stop);
      continue;
    }
    const auto ev = ServerTest::named_events(r->body);
    std::string text;
    for (const auto& e : ev)
      if (e.name == "content_block_delta") text += e.data["delta"]["text"].get<std::string>();
    EXPECT_EQ(text, before);
    EXPECT_EQ(ev[ev.size() - 2].data["delta"]["stop_sequence"], stop);
  }
  // The assistant's last message is continued: the reply is what follows it.
  const json prefilled = json::array({{{"role", "user"}, {"content", "Tell me a story"}},
                                      {{"role", "assistant"}, {"content", "Once upon"}}});
  const json j = json::parse(post(*s, "/v1/messages", {{"messages", prefilled}, {"max_tokens", 10}, {"temperature", 0}})->body);
  const ChatPrompt cp(model_->tokenizer(), kModel, {}, nullptr);
  nlohmann::ordered_json m = nlohmann::ordered_json::array({chat_message("user", "Tell me a story")});
  EXPECT_EQ(j["content"][0]["text"], alone(cp.tokenize(cp.render(m, true) + "Once upon"), 10));
}

TEST_F(ServerTest, MessagesGiveThinkingBlocksWhenTheModelReasons) {
  const std::string tpl = ::testing::TempDir() + "/messages_think.jinja";
  {
    std::ofstream f(tpl);
    f << "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
         "{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}";
  }
  ServerOptions o;
  o.chat.template_path = tpl;
  auto s = start(o);
  const json body = {{"messages", messages_user("hi")}, {"max_tokens", 12}, {"temperature", 0}};
  const json j = json::parse(post(*s, "/v1/messages", body)->body);
  ASSERT_EQ(j["content"].size(), 2u) << j;
  EXPECT_EQ(j["content"][0]["type"], "thinking");
  const std::string thinking = j["content"][0]["thinking"];
  EXPECT_FALSE(thinking.empty());
  json sb = body;
  sb["stream"] = true;
  std::string streamed;
  std::vector<std::string> blocks;
  for (const auto& e : ServerTest::named_events(post(*s, "/v1/messages", sb)->body)) {
    if (e.name == "content_block_start") blocks.push_back(e.data["content_block"]["type"]);
    if (e.name == "content_block_delta" && e.data["delta"]["type"] == "thinking_delta")
      streamed += e.data["delta"]["thinking"].get<std::string>();
  }
  EXPECT_EQ(streamed, thinking);
  EXPECT_EQ(blocks, (std::vector<std::string>{"thinking", "text"}));
}

TEST_F(ServerTest, MessagesHoldThinkingToItsBudget) {
  const std::string tpl = ::testing::TempDir() + "/messages_budget.jinja";
  {
    std::ofstream f(tpl);  // opens the thinking in the prompt, as a reasoning model's template does
    f << "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
         "{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}";
  }
  ServerOptions o;
  o.chat.template_path = tpl;
  {  // TinyStories-656K cannot spell "</think>" ('/' is not in its vocabulary): refused up front.
    auto tiny = start(o);
    const auto r = post(*tiny, "/v1/messages", {{"messages", messages_user("hi")}, {"max_tokens", 24},
                                               {"thinking", {{"type", "enabled"}, {"budget_tokens", 4}}}});
    EXPECT_EQ(r->status, 400);
    EXPECT_NE(r->body.find("cannot spell </think>"), std::string::npos) << r->body;
  }
  // bytelm-2k spells anything, a byte per token.
  o.port = 0;
  o.threads = 2;
  Server byte_server(Model::load(std::string(TRIATTN_SHARED_DIR) + "/models/bytelm-2k"), o);
  byte_server.start();
  Server* s = &byte_server;
  json body = {{"messages", messages_user("hi")}, {"max_tokens", 24}, {"temperature", 0}};
  const json free = json::parse(post(*s, "/v1/messages", body)->body);
  ASSERT_EQ(free["content"][0]["type"], "thinking") << free;
  body["thinking"] = {{"type", "enabled"}, {"budget_tokens", 4}};
  const json held = json::parse(post(*s, "/v1/messages", body)->body);
  ASSERT_EQ(held["content"].size(), 2u) << held;
  const std::string thought = held["content"][0]["thinking"], all = free["content"][0]["thinking"];
  // Four tokens (bytes) of the same thinking, then the answer (the close marker was forced).
  EXPECT_EQ(thought, all.substr(0, 4)) << thought << " | " << all;
  EXPECT_EQ(held["content"][1]["type"], "text");
  EXPECT_FALSE(held["content"][1]["text"].get<std::string>().empty()) << held;

  // Refused by name: a budget not under max_tokens, an unknown type, a budget with
  // "disabled", a forced tool call with thinking on.
  auto param_error = [&](const json& thinking, json extra = json::object()) {
    json b = body;
    b["thinking"] = thinking;
    for (auto it = extra.begin(); it != extra.end(); ++it) b[it.key()] = it.value();
    const auto r = post(*s, "/v1/messages", b);
    EXPECT_EQ(r->status, 400) << r->body;
    return json::parse(r->body)["error"]["message"].get<std::string>();
  };
  EXPECT_NE(param_error({{"type", "enabled"}, {"budget_tokens", 24}}).find("'thinking.budget_tokens'"), std::string::npos);
  EXPECT_NE(param_error({{"type", "adaptive"}}).find("'thinking.type'"), std::string::npos);
  EXPECT_NE(param_error({{"type", "disabled"}, {"budget_tokens", 3}}).find("'thinking.budget_tokens'"),
            std::string::npos);
  EXPECT_NE(param_error({{"type", "enabled"}}).find("'thinking.budget_tokens'"), std::string::npos);
  byte_server.stop();
}

TEST_F(ServerTest, MessagesWithThinkingDisabledRenderWithoutIt) {
  ServerOptions o;
  o.chat.template_path = std::string(TRIATTN_SHARED_DIR) + "/chat-templates/Qwen-Qwen3-0.6B.jinja";
  auto s = start(o);
  const json body = {{"messages", messages_user("hi")}};
  auto count = [&](const json& b) { return json::parse(post(*s, "/v1/messages/count_tokens", b)->body)["input_tokens"]; };
  json off = body;
  off["thinking"] = {{"type", "disabled"}};
  // Qwen3's template writes an empty <think></think> block when thinking is off.
  EXPECT_GT(count(off).get<int>(), count(body).get<int>());
  json on = body;
  on["thinking"] = {{"type", "enabled"}, {"budget_tokens", 8}};
  EXPECT_EQ(count(on), count(body));
}

TEST_F(ServerTest, MessagesErrorsHaveAnthropicsShape) {
  ServerOptions o;
  o.chat.template_path = test::kNoToolsTemplate;
  auto s = start(o);
  auto error_of = [&](const std::string& path, const json& body) {
    const auto r = post(*s, path, body);
    EXPECT_EQ(r->status, 400) << body.dump() << " -> " << r->body;
    const json j = json::parse(r->body);
    EXPECT_EQ(j["type"], "error");
    EXPECT_EQ(j["error"]["type"], "invalid_request_error");
    return j["error"]["message"].get<std::string>();
  };
  const json user = messages_user("hi");
  EXPECT_NE(error_of("/v1/messages", {{"messages", user}}).find("'max_tokens' is required"), std::string::npos);
  // This template shows no tool calls: tools are refused for it.
  const json tools = json::array({{{"name", "f"}, {"input_schema", {{"type", "object"}}}}});
  EXPECT_NE(error_of("/v1/messages", {{"messages", user}, {"max_tokens", 4}, {"tools", tools}}).find("'tools'"),
            std::string::npos);
  EXPECT_NE(error_of("/v1/messages", {{"messages", user}, {"max_tokens", 4}, {"frobnicate", 1}}).find("'frobnicate'"),
            std::string::npos);
  EXPECT_NE(error_of("/v1/messages", {{"messages", user}, {"max_tokens", 4}, {"stop_sequences", json::array({1})}}).find("'stop_sequences'"),
            std::string::npos);
  const json image = json::array({{{"role", "user"},
                                   {"content", json::array({{{"type", "image"}, {"source", json::object()}}})}}});
  EXPECT_NE(error_of("/v1/messages", {{"messages", image}, {"max_tokens", 4}}).find("'messages[0].content[0].type'"),
            std::string::npos);
  const json tool = json::array({user[0], {{"role", "assistant"},
                                          {"content", json::array({{{"type", "tool_result"}, {"tool_use_id", "t"}}})}}});
  EXPECT_NE(error_of("/v1/messages", {{"messages", tool}, {"max_tokens", 4}}).find("'messages[1].content[0].type'"),
            std::string::npos);
  EXPECT_NE(error_of("/v1/messages/count_tokens", {{"messages", user}, {"max_tokens", 4}}).find("'max_tokens'"),
            std::string::npos);
  // The key as Anthropic's clients send it.
  ServerOptions keyed;
  keyed.api_key = "k";
  auto locked = start(keyed);
  httplib::Client c("127.0.0.1", locked->port());
  const std::string b = json({{"messages", user}, {"max_tokens", 2}}).dump();
  EXPECT_EQ(c.Post("/v1/messages", b, "application/json")->status, 401);
  EXPECT_EQ(c.Post("/v1/messages", httplib::Headers{{"x-api-key", "k"}}, b, "application/json")->status, 200);
}

}  // namespace
}  // namespace triattn::server
