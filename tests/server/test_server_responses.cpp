// OpenAI's Responses API end to end: the response object, its stream of named events in the
// documented order (deltas adding up to the final text), previous_response_id continuing
// the kept sequence (cached tokens, and the text of the whole conversation sent at once),
// GET and DELETE of stored responses, text.format, reasoning items, and errors naming fields.
#include <gtest/gtest.h>
#include <httplib.h>

#include <fstream>

#include "raw_client.h"
#include "server_test_fixture.h"

namespace triattn::server {
namespace {

using json = nlohmann::json;
using ServerTest = test::ServerTest;

std::string responses_output_text(const json& response) {
  std::string text;
  for (const json& item : response["output"])
    if (item["type"] == "message")
      for (const json& c : item["content"]) text += c["text"].get<std::string>();
  return text;
}

httplib::Result responses_send(Server& s, const std::string& method, const std::string& path) {
  httplib::Client c("127.0.0.1", s.port());
  return method == "GET" ? c.Get(path.c_str()) : c.Delete(path.c_str());
}

TEST_F(ServerTest, ResponsesAnswerLikeChatWithTheDocumentedObject) {
  auto s = start();
  const auto r = post(*s, "/v1/responses", {{"input", "Tell me a story"}, {"max_output_tokens", 20}, {"temperature", 0}});
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  EXPECT_EQ(j["id"].get<std::string>().rfind("resp_", 0), 0u);
  EXPECT_EQ(j["object"], "response");
  EXPECT_TRUE(j["created_at"].is_number_integer());
  EXPECT_EQ(j["model"], model_->config().name);
  EXPECT_EQ(j["status"], "incomplete");
  EXPECT_EQ(j["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(j["max_output_tokens"], 20);
  EXPECT_TRUE(j["previous_response_id"].is_null());
  ASSERT_EQ(j["output"].size(), 1u);
  const json& msg = j["output"][0];
  EXPECT_EQ(msg["type"], "message");
  EXPECT_EQ(msg["role"], "assistant");
  EXPECT_EQ(msg["id"].get<std::string>().rfind("msg_", 0), 0u);
  EXPECT_EQ(msg["content"][0]["type"], "output_text");
  EXPECT_TRUE(msg["content"][0]["annotations"].is_array());

  const json chat = json::parse(post(*s, "/v1/chat/completions",
                                     {{"messages", json::array({{{"role", "user"}, {"content", "Tell me a story"}}})},
                                      {"max_tokens", 20},
                                      {"temperature", 0}})
                                    ->body);
  EXPECT_EQ(msg["content"][0]["text"], chat["choices"][0]["message"]["content"]);
  EXPECT_EQ(j["usage"]["input_tokens"], chat["usage"]["prompt_tokens"]);
  EXPECT_EQ(j["usage"]["output_tokens"], 20);
  EXPECT_EQ(j["usage"]["total_tokens"], j["usage"]["input_tokens"].get<int>() + 20);
  EXPECT_EQ(j["usage"]["output_tokens_details"]["reasoning_tokens"], 0);
  EXPECT_TRUE(j["usage"]["input_tokens_details"]["cached_tokens"].is_number_integer());

  // instructions are the system message; developer is the system role too.
  const json a = json::parse(post(*s, "/v1/responses", {{"instructions", "Be brief."}, {"input", "Hi"},
                                                        {"max_output_tokens", 8}, {"temperature", 0}})->body);
  const json b = json::parse(
      post(*s, "/v1/responses",
           {{"input", json::array({{{"role", "developer"}, {"content", "Be brief."}},
                                   {{"type", "message"}, {"role", "user"}, {"content", json::array({{{"type", "input_text"}, {"text", "Hi"}}})}}})},
            {"max_output_tokens", 8},
            {"temperature", 0}})->body);
  EXPECT_EQ(responses_output_text(a), responses_output_text(b));
  EXPECT_EQ(a["usage"]["input_tokens"], b["usage"]["input_tokens"]);
  EXPECT_EQ(a["instructions"], "Be brief.");
}

TEST_F(ServerTest, ResponsesStreamTheDocumentedEventsInOrder) {
  auto s = start();
  const json body = {{"input", "Tell me a story"}, {"max_output_tokens", 20}, {"temperature", 0}};
  const json whole = json::parse(post(*s, "/v1/responses", body)->body);
  json sb = body;
  sb["stream"] = true;
  const auto r = post(*s, "/v1/responses", sb);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  const auto ev = ServerTest::named_events(r->body);
  ASSERT_GE(ev.size(), 9u);
  std::vector<std::string> names;
  std::string deltas;
  for (size_t i = 0; i < ev.size(); ++i) {
    EXPECT_EQ(ev[i].data["type"], ev[i].name);
    EXPECT_EQ(ev[i].data["sequence_number"], i);
    if (ev[i].name == "response.output_text.delta") {
      deltas += ev[i].data["delta"].get<std::string>();
      if (names.back() == ev[i].name) continue;
    }
    names.push_back(ev[i].name);
  }
  const std::vector<std::string> expected = {"response.created",           "response.in_progress",
                                             "response.output_item.added", "response.content_part.added",
                                             "response.output_text.delta", "response.output_text.done",
                                             "response.content_part.done", "response.output_item.done",
                                             "response.incomplete"};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(ev[0].data["response"]["status"], "in_progress");
  const json& done = ev.back().data["response"];
  EXPECT_EQ(deltas, responses_output_text(whole));
  EXPECT_EQ(responses_output_text(done), deltas);
  EXPECT_EQ(ev[ev.size() - 4].data["text"], deltas);  // output_text.done
  EXPECT_EQ(done["usage"]["output_tokens"], 20);
  EXPECT_EQ(done["status"], "incomplete");
  // The item the events name is the one in the final output.
  EXPECT_EQ(ev[2].data["item"]["id"], done["output"][0]["id"]);
}

TEST_F(ServerTest, StoredResponsesAreReadAndDeleted) {
  ServerOptions o;
  o.scheduler.reuse_slots = 2;
  auto s = start(o);
  const json a = json::parse(post(*s, "/v1/responses", {{"input", "Hi"}, {"max_output_tokens", 5}, {"temperature", 0}})->body);
  const std::string path = "/v1/responses/" + a["id"].get<std::string>();
  const auto got = responses_send(*s, "GET", path);
  ASSERT_EQ(got->status, 200) << got->body;
  EXPECT_EQ(json::parse(got->body), a);
  auto kept = [&] { return test::metric(*s, "triattn_sequences_kept"); };
  ASSERT_TRUE(triattn::test::eventually([&] { return kept() == 1; }));  // its KV cache, for previous_response_id
  const auto del = responses_send(*s, "DELETE", path);
  ASSERT_EQ(del->status, 200);
  EXPECT_EQ(kept(), 0);  // deleting the response gives its KV cache back at once
  EXPECT_EQ(json::parse(del->body), json({{"id", a["id"]}, {"object", "response"}, {"deleted", true}}));
  EXPECT_EQ(responses_send(*s, "GET", path)->status, 404);
  EXPECT_EQ(responses_send(*s, "DELETE", path)->status, 404);
  const auto cont = post(*s, "/v1/responses", {{"input", "More"}, {"previous_response_id", a["id"]}});
  EXPECT_EQ(cont->status, 400);
  EXPECT_EQ(json::parse(cont->body)["error"]["param"], "previous_response_id");
  // store: false keeps nothing.
  const json b = json::parse(post(*s, "/v1/responses", {{"input", "Hi"}, {"max_output_tokens", 3}, {"store", false}})->body);
  EXPECT_EQ(b["store"], false);
  EXPECT_EQ(responses_send(*s, "GET", "/v1/responses/" + b["id"].get<std::string>())->status, 404);
  httplib::Client c("127.0.0.1", s->port());
  const auto put = c.Put(path.c_str(), "{}", "application/json");
  EXPECT_EQ(put->status, 405);
  EXPECT_EQ(put->get_header_value("Allow"), "GET, DELETE");
}

TEST_F(ServerTest, ResponsesRefuseWhatTheyDoNotSupportByName) {
  ServerOptions o;
  o.chat.template_path = test::kNoToolsTemplate;
  auto s = start(o);
  auto error_of = [&](const json& body) {
    const auto r = post(*s, "/v1/responses", body);
    EXPECT_EQ(r->status, 400) << body.dump() << " -> " << r->body;
    return json::parse(r->body)["error"];
  };
  EXPECT_EQ(error_of({{"input", "x"}, {"frobnicate", 1}})["param"], "frobnicate");
  // This template shows no tool calls: tools are refused for it (test_server_api_tools
  // calls them with a template that does).
  EXPECT_EQ(error_of({{"input", "x"}, {"tools", json::array({{{"type", "function"}, {"name", "f"}}})}})["param"], "tools");
  EXPECT_EQ(error_of({{"max_output_tokens", 4}})["param"], "input");
  const json neg = error_of({{"input", "x"}, {"max_output_tokens", -1}});
  EXPECT_EQ(neg["param"], "max_output_tokens");
  EXPECT_EQ(neg["message"].get<std::string>().rfind("'max_output_tokens'", 0), 0u) << neg;
  EXPECT_EQ(error_of({{"input", json::array({{{"type", "web_search_call"}, {"id", "ws_1"}}})}})["param"], "input[0].type");
  EXPECT_EQ(error_of({{"input", json::array({{{"role", "user"},
                                              {"content", json::array({{{"type", "input_image"}, {"image_url", "x"}}})}}})}})["param"],
            "input[0].content[0].type");
  EXPECT_EQ(error_of({{"input", "x"}, {"text", {{"format", {{"type", "json_schema"}, {"schema", json::object()}, {"extra", 1}}}}}})["param"],
            "text.format.extra");
  EXPECT_EQ(error_of({{"input", "x"}, {"text", {{"format", {{"type", "yaml"}}}}}})["param"], "text.format.type");
  EXPECT_EQ(error_of({{"input", "x"}, {"temperature", 3}})["param"], "temperature");
  EXPECT_EQ(error_of({{"input", "x"}, {"reasoning", {{"effort", "high"}}}})["param"], "reasoning.effort");
  EXPECT_EQ(error_of({{"input", "x"}, {"previous_response_id", "resp_nope"}})["param"], "previous_response_id");
}

TEST_F(ServerTest, ResponsesGiveReasoningItemsWhenTheModelReasons) {
  const std::string tpl = ::testing::TempDir() + "/responses_think.jinja";
  {
    std::ofstream f(tpl);
    f << "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
         "{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}";
  }
  ServerOptions o;
  o.chat.template_path = tpl;
  auto s = start(o);
  const json body = {{"input", "hi"}, {"max_output_tokens", 12}, {"temperature", 0}};
  const json j = json::parse(post(*s, "/v1/responses", body)->body);
  ASSERT_EQ(j["output"].size(), 2u) << j;
  EXPECT_EQ(j["output"][0]["type"], "reasoning");
  const std::string reasoning = j["output"][0]["content"][0]["text"];
  EXPECT_FALSE(reasoning.empty());
  EXPECT_EQ(j["output"][1]["type"], "message");
  // It never closes </think>: every token with text is reasoning.
  EXPECT_GT(j["usage"]["output_tokens_details"]["reasoning_tokens"].get<int>(), 0);
  EXPECT_LE(j["usage"]["output_tokens_details"]["reasoning_tokens"].get<int>(), 12);
  json sb = body;
  sb["stream"] = true;
  std::string streamed;
  for (const auto& e : ServerTest::named_events(post(*s, "/v1/responses", sb)->body))
    if (e.name == "response.reasoning_text.delta") streamed += e.data["delta"].get<std::string>();
  EXPECT_EQ(streamed, reasoning);
}

// A continued response keeps the reasoning of the one before in its tokens: sent whole, the
// conversation could only carry the answer text (here none: the model never closes </think>).
TEST_F(ServerTest, PreviousResponseKeepsTheReasoningOfTheTurnBefore) {
  const std::string tpl = ::testing::TempDir() + "/responses_chain_think.jinja";
  {
    std::ofstream f(tpl);
    f << "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
         "{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}";
  }
  ServerOptions o;
  o.chat.template_path = tpl;
  o.scheduler.reuse_slots = 2;
  auto s = start(o);
  const json a = json::parse(post(*s, "/v1/responses", {{"input", "hi"}, {"max_output_tokens", 10}, {"temperature", 0}})->body);
  ASSERT_EQ(a["output"][0]["type"], "reasoning") << a;
  const json b = json::parse(post(*s, "/v1/responses", {{"input", "more"}, {"previous_response_id", a["id"]},
                                                        {"max_output_tokens", 4}, {"temperature", 0}})->body);
  const int64_t first = a["usage"]["input_tokens"].get<int64_t>() + a["usage"]["output_tokens"].get<int64_t>();
  EXPECT_EQ(b["usage"]["input_tokens_details"]["cached_tokens"], first - 1);
  const json whole = json::parse(
      post(*s, "/v1/responses", {{"input", json::array({{{"role", "user"}, {"content", "hi"}},
                                                        {{"role", "assistant"}, {"content", responses_output_text(a)}},
                                                        {{"role", "user"}, {"content", "more"}}})},
                                 {"max_output_tokens", 4}, {"temperature", 0}})->body);
  // The same turns; the continued one also holds the reasoning's tokens.
  EXPECT_GT(b["usage"]["input_tokens"].get<int64_t>(), whole["usage"]["input_tokens"].get<int64_t>() + 5);
}

// The byte-level model: any text tokenizes back to the same ids, so a conversation sent
// whole and the same conversation continued from a stored response are the same tokens;
// and it spells any JSON.
class ResponsesByteModelTest : public ServerTest {
 protected:
  static void SetUpTestSuite() {
    model_ = Model::load(std::string(TRIATTN_SHARED_DIR) + "/models/bytelm-2k");
    stats_.reset();  // the other suite's statistics are another model's
  }
};

TEST_F(ResponsesByteModelTest, PreviousResponseContinuesTheKeptSequence) {
  ServerOptions o;
  o.scheduler.reuse_slots = 2;
  auto s = start(o);
  const json a = json::parse(post(*s, "/v1/responses", {{"input", "The cat"}, {"max_output_tokens", 12}, {"temperature", 0}})->body);
  ASSERT_EQ(a["object"], "response") << a;
  EXPECT_EQ(a["usage"]["input_tokens_details"]["cached_tokens"], 0);
  const std::string first = responses_output_text(a);
  const json b = json::parse(post(*s, "/v1/responses", {{"input", "The dog"}, {"previous_response_id", a["id"]},
                                                        {"max_output_tokens", 12}, {"temperature", 0}})->body);
  ASSERT_EQ(b["object"], "response") << b;
  EXPECT_EQ(b["previous_response_id"], a["id"]);
  // The kept sequence held the first prompt and reply (its last token not yet fed).
  const int64_t first_tokens = a["usage"]["input_tokens"].get<int64_t>() + a["usage"]["output_tokens"].get<int64_t>();
  EXPECT_EQ(b["usage"]["input_tokens_details"]["cached_tokens"].get<int64_t>(), first_tokens - 1);
  const json whole = json::parse(
      post(*s, "/v1/responses",
           {{"input", json::array({{{"role", "user"}, {"content", "The cat"}},
                                   {{"role", "assistant"}, {"content", json::array({{{"type", "output_text"}, {"text", first}}})}},
                                   {{"role", "user"}, {"content", "The dog"}}})},
            {"max_output_tokens", 12},
            {"temperature", 0}})->body);
  EXPECT_EQ(responses_output_text(b), responses_output_text(whole));
  EXPECT_EQ(b["usage"]["input_tokens"], whole["usage"]["input_tokens"]);
}

TEST_F(ResponsesByteModelTest, TextFormatConstrainsTheOutputInSchemaOrder) {
  auto s = start();
  // The schema's properties out of alphabetical order: generated in the order written.
  const std::string body =
      R"({"input": "a record", "max_output_tokens": 200, "temperature": 0, "text": {"format": {"type": "json_schema",
          "name": "r", "strict": true, "schema": {"type": "object", "properties": {"zeta": {"enum": ["x"]},
          "alpha": {"enum": ["y"]}}, "required": ["zeta", "alpha"], "additionalProperties": false}}}})";
  httplib::Client c("127.0.0.1", s->port());
  c.set_read_timeout(60, 0);
  const auto r = c.Post("/v1/responses", body, "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  EXPECT_EQ(j["status"], "completed") << r->body;
  const std::string text = responses_output_text(j);
  EXPECT_EQ(json::parse(text), json({{"zeta", "x"}, {"alpha", "y"}})) << text;
  EXPECT_LT(text.find("zeta"), text.find("alpha"));
  EXPECT_EQ(j["text"]["format"]["type"], "json_schema");
}

}  // namespace
}  // namespace triattn::server
