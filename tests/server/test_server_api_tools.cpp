// Tool calls through the Responses and Messages APIs, on bytelm-2k (a byte-level Qwen3) with
// Qwen3's own chat template: a forced call (tool_choice required, any, or a named function)
// comes back as function_call items / tool_use blocks whose arguments satisfy the schema,
// whole and streamed with each API's documented events; the calls and their results sent
// back render as chat completions renders tool_calls and tool messages (the same prompt
// tokens); a stored response that called is continued with the call's output; and tool
// types the server does not run are refused by name.
#include "server_test_fixture.h"

namespace triattn::server::test {
namespace {

using ojson = nlohmann::ordered_json;

const std::string kApiToolsTemplate = std::string(TRIATTN_SHARED_DIR) + "/chat-templates/Qwen-Qwen3-0.6B.jinja";

const json kApiToolsSchema = json::parse(R"({"type": "object", "properties": {"city": {"type": "string", "maxLength": 10},
  "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city", "days"], "additionalProperties": false})");

// "" when `arguments` (JSON text) satisfy kApiToolsSchema.
std::string api_tools_violation(const std::string& arguments) {
  const json a = json::parse(arguments, nullptr, false);
  if (!a.is_object() || a.size() != 2 || !a.contains("city") || !a["city"].is_string() || !a.contains("days") ||
      !a["days"].is_number_integer() || a["days"] < 1 || a["days"] > 7)
    return "arguments outside the schema: " + arguments;
  return "";
}

// ServerTest's helpers (named_events) with a server of its own: bytelm-2k and Qwen3's template.
class ApiToolsTest : public ServerTest {
 protected:
  static void SetUpTestSuite() {
    tools_model_ = Model::load(std::string(TRIATTN_SHARED_DIR) + "/models/bytelm-2k/bytelm-2k-f32.gguf");
    ServerOptions o;
    o.port = 0;
    o.threads = 2;
    o.chat.template_path = kApiToolsTemplate;
    o.chat.no_think = true;  // the call comes at once (the APIs take no chat_template_kwargs)
    o.scheduler.reuse_slots = 2;  // a stored response keeps its sequence
    server_ = std::make_unique<Server>(tools_model_, o);
    server_->start();
  }
  static void TearDownTestSuite() {
    server_.reset();
    tools_model_.reset();
  }
  static httplib::Result send(const std::string& path, const json& body) {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(120, 0);
    return c.Post(path.c_str(), body.dump(), "application/json");
  }
  static json ok(const std::string& path, const json& body) {
    auto r = send(path, body);
    EXPECT_TRUE(r);
    if (!r) return json();
    EXPECT_EQ(r->status, 200) << r->body;
    return r->status == 200 ? json::parse(r->body) : json();
  }
  static json responses_body(const json& tool_choice, int seed) {
    return {{"input", "Weather in Oslo?"},
            {"tools", json::array({{{"type", "function"},
                                    {"name", "get_weather"},
                                    {"description", "Weather in a city"},
                                    {"parameters", kApiToolsSchema},
                                    {"strict", true}},
                                   {{"type", "function"}, {"name", "get_time"}, {"parameters", {{"type", "object"}}}}})},
            {"tool_choice", tool_choice},
            {"parallel_tool_calls", false},
            {"temperature", 1.0},
            {"seed", seed},
            {"max_output_tokens", 300}};
  }
  static json messages_body(const json& tool_choice, int seed) {
    return {{"messages", json::array({{{"role", "user"}, {"content", "Weather in Oslo?"}}})},
            {"tools", json::array({{{"name", "get_weather"}, {"description", "Weather in a city"}, {"input_schema", kApiToolsSchema}},
                                   {{"name", "get_time"}, {"input_schema", {{"type", "object"}}}}})},
            {"tool_choice", tool_choice},
            {"temperature", 1.0},
            {"max_tokens", 300}};
  }
  // The prompt tokens chat completions gives these messages with an API's tools (as chat's
  // {type, function}, keys in the order the API's body sent them: schema keys matter to BPE).
  static int64_t chat_prompt_tokens(const json& messages, const json& api_tools) {
    ojson tools = ojson::array();
    for (const json& t : api_tools) {
      ojson f = ojson::object();
      for (auto k = t.begin(); k != t.end(); ++k)
        if (k.key() != "type") f[k.key() == "input_schema" ? "parameters" : k.key()] = ojson::parse(k->dump());
      tools.push_back({{"type", "function"}, {"function", f}});
    }
    ojson body = {{"messages", ojson::parse(messages.dump())}, {"tools", tools}, {"max_tokens", 1}, {"temperature", 0}};
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(120, 0);
    auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
    EXPECT_TRUE(r);
    if (!r) return -1;
    EXPECT_EQ(r->status, 200) << r->body;
    return r->status == 200 ? json::parse(r->body)["usage"]["prompt_tokens"].get<int64_t>() : -1;
  }
  static inline std::shared_ptr<const Model> tools_model_;
  static inline std::unique_ptr<Server> server_;
};

TEST_F(ApiToolsTest, ResponsesForcedCallsAreFunctionCallItems) {
  for (int seed : {1, 2}) {
    const json j = ok("/v1/responses", responses_body("required", seed));
    ASSERT_EQ(j["status"], "completed") << j;
    ASSERT_EQ(j["output"].size(), 1u) << j;  // the call only: no message item
    const json& item = j["output"][0];
    EXPECT_EQ(item["type"], "function_call");
    EXPECT_EQ(item["id"].get<std::string>().rfind("fc_", 0), 0u) << item;
    EXPECT_FALSE(item["call_id"].get<std::string>().empty());
    EXPECT_EQ(item["status"], "completed");
    ASSERT_TRUE(item["arguments"].is_string()) << item;
    if (item["name"] == "get_weather") {
      EXPECT_EQ(api_tools_violation(item["arguments"]), "") << seed;
    }
    else EXPECT_EQ(item["name"], "get_time") << item;
    EXPECT_EQ(j["tools"][0]["name"], "get_weather");  // the request's tools, echoed
    EXPECT_EQ(j["tool_choice"], "required");
    EXPECT_EQ(j["parallel_tool_calls"], false);
  }
  const json named = ok("/v1/responses", responses_body({{"type", "function"}, {"name", "get_weather"}}, 3));
  ASSERT_EQ(named["output"].size(), 1u) << named;
  EXPECT_EQ(named["output"][0]["name"], "get_weather");
  EXPECT_EQ(api_tools_violation(named["output"][0]["arguments"]), "");
}

TEST_F(ApiToolsTest, ResponsesStreamCallsWithTheDocumentedEvents) {
  json body = responses_body({{"type", "function"}, {"name", "get_weather"}}, 4);
  const json whole = ok("/v1/responses", body);
  body["stream"] = true;
  auto r = send("/v1/responses", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  std::vector<std::string> names;
  std::string args, item_id;
  json done_args, added, completed;
  for (const auto& e : named_events(r->body)) {
    names.push_back(e.name);
    EXPECT_EQ(e.data["type"], e.name);
    if (e.name == "response.output_item.added") added = e.data["item"];
    if (e.name == "response.function_call_arguments.delta") {
      args += e.data["delta"].get<std::string>();
      item_id = e.data["item_id"];
    }
    if (e.name == "response.function_call_arguments.done") done_args = e.data["arguments"];
    if (e.name == "response.completed") completed = e.data["response"];
  }
  const std::vector<std::string> expected = {"response.created",
                                             "response.in_progress",
                                             "response.output_item.added",
                                             "response.function_call_arguments.delta",
                                             "response.function_call_arguments.done",
                                             "response.output_item.done",
                                             "response.completed"};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(added["type"], "function_call");
  EXPECT_EQ(added["status"], "in_progress");
  EXPECT_EQ(added["name"], "get_weather");
  EXPECT_EQ(added["arguments"], "");
  EXPECT_EQ(item_id, added["id"]);
  EXPECT_EQ(done_args, args);
  EXPECT_EQ(api_tools_violation(args), "");
  ASSERT_EQ(completed["output"].size(), 1u) << completed;
  EXPECT_EQ(completed["output"][0]["arguments"], args);
  EXPECT_EQ(args, whole["output"][0]["arguments"]);  // same seed, same call
}

TEST_F(ApiToolsTest, ResponsesCallsAndOutputsRenderAsChatToolMessages) {
  const std::string args = R"({"city": "Oslo", "days": 1})";
  json body = responses_body("auto", 5);
  body["tools"][0].erase("strict");  // strict is kept only when a call is forced
  body["max_output_tokens"] = 1;
  body["input"] = json::array({{{"role", "user"}, {"content", "Weather in Oslo?"}},
                               {{"type", "function_call"}, {"call_id", "call_1"}, {"name", "get_weather"}, {"arguments", args}},
                               {{"type", "function_call_output"}, {"call_id", "call_1"}, {"output", "sunny"}}});
  const json j = ok("/v1/responses", body);
  ASSERT_FALSE(j.is_null());
  const json chat_messages = json::array(
      {{{"role", "user"}, {"content", "Weather in Oslo?"}},
       {{"role", "assistant"},
        {"content", nullptr},
        {"tool_calls", json::array({{{"id", "call_1"}, {"type", "function"},
                                     {"function", {{"name", "get_weather"}, {"arguments", args}}}}})}},
       {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "sunny"}}});
  EXPECT_EQ(j["usage"]["input_tokens"].get<int64_t>(), chat_prompt_tokens(chat_messages, body["tools"]));
  // Arguments that are not a JSON object are refused by name.
  body["input"][1]["arguments"] = "{";
  auto bad = send("/v1/responses", body);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(json::parse(bad->body)["error"]["param"], "input[1].arguments") << bad->body;
}

TEST_F(ApiToolsTest, ResponsesContinueAStoredCallWithItsOutput) {
  const json first = ok("/v1/responses", responses_body("required", 6));
  ASSERT_EQ(first["output"].size(), 1u) << first;
  const json call = first["output"][0];
  json next = {{"previous_response_id", first["id"]},
               {"input", json::array({{{"type", "function_call_output"}, {"call_id", call["call_id"]}, {"output", "sunny"}}})},
               {"tools", responses_body("auto", 0)["tools"]},
               {"tool_choice", "none"},
               {"max_output_tokens", 4},
               {"temperature", 0}};
  next["tools"][0].erase("strict");
  const json j = ok("/v1/responses", next);
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(j["previous_response_id"], first["id"]);
  EXPECT_EQ(j["output"][0]["type"], "message");
  // The kept sequence (the prompt and the call) is continued, not prefilled again.
  EXPECT_GT(j["usage"]["input_tokens_details"]["cached_tokens"].get<int64_t>(), 0);
  EXPECT_GT(j["usage"]["input_tokens"].get<int64_t>(),
            first["usage"]["input_tokens"].get<int64_t>() + first["usage"]["output_tokens"].get<int64_t>());
}

TEST_F(ApiToolsTest, MessagesForcedCallsAreToolUseBlocks) {
  for (const json& choice : {json{{"type", "any"}, {"disable_parallel_tool_use", true}},
                             json{{"type", "tool"}, {"name", "get_weather"}, {"disable_parallel_tool_use", true}}}) {
    json body = messages_body(choice, 0);
    const json j = ok("/v1/messages", body);
    ASSERT_FALSE(j.is_null());
    EXPECT_EQ(j["stop_reason"], "tool_use") << j;
    ASSERT_EQ(j["content"].size(), 1u) << j;  // the call only: no text block
    const json& block = j["content"][0];
    EXPECT_EQ(block["type"], "tool_use");
    EXPECT_FALSE(block["id"].get<std::string>().empty());
    ASSERT_TRUE(block["input"].is_object()) << block;
    if (choice["type"] == "tool") {
      EXPECT_EQ(block["name"], "get_weather");
    }
    if (block["name"] == "get_weather") {
      EXPECT_EQ(api_tools_violation(block["input"].dump()), "") << block;
    }
  }
}

TEST_F(ApiToolsTest, MessagesStreamToolUseWithInputJsonDeltas) {
  json body = messages_body({{"type", "tool"}, {"name", "get_weather"}, {"disable_parallel_tool_use", true}}, 0);
  body["stream"] = true;
  auto r = send("/v1/messages", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  std::vector<std::string> names;
  std::string partial;
  json start, delta;
  for (const auto& e : named_events(r->body)) {
    names.push_back(e.name);
    if (e.name == "content_block_start") start = e.data["content_block"];
    if (e.name == "content_block_delta") {
      EXPECT_EQ(e.data["delta"]["type"], "input_json_delta");
      partial += e.data["delta"]["partial_json"].get<std::string>();
    }
    if (e.name == "message_delta") delta = e.data["delta"];
  }
  const std::vector<std::string> expected = {"message_start", "content_block_start", "content_block_delta",
                                             "content_block_stop", "message_delta", "message_stop"};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(start["type"], "tool_use");
  EXPECT_EQ(start["name"], "get_weather");
  EXPECT_EQ(start["input"], json::object());
  EXPECT_EQ(api_tools_violation(partial), "");
  EXPECT_EQ(delta["stop_reason"], "tool_use");
}

TEST_F(ApiToolsTest, MessagesToolUseAndResultsRenderAsChatToolMessages) {
  const json input = {{"city", "Oslo"}, {"days", 1}};
  const json messages = json::array(
      {{{"role", "user"}, {"content", "Weather in Oslo?"}},
       {{"role", "assistant"},
        {"content", json::array({{{"type", "tool_use"}, {"id", "toolu_1"}, {"name", "get_weather"}, {"input", input}}})}},
       {{"role", "user"},
        {"content", json::array({{{"type", "tool_result"}, {"tool_use_id", "toolu_1"},
                                  {"content", json::array({{{"type", "text"}, {"text", "sunny"}}})}}})}}});
  json body = messages_body({{"type", "auto"}}, 0);
  body["messages"] = messages;
  body["max_tokens"] = 1;
  const json j = ok("/v1/messages", body);
  ASSERT_FALSE(j.is_null());
  const json chat_messages = json::array(
      {{{"role", "user"}, {"content", "Weather in Oslo?"}},
       {{"role", "assistant"},
        {"content", nullptr},
        {"tool_calls", json::array({{{"id", "toolu_1"}, {"type", "function"},
                                     {"function", {{"name", "get_weather"}, {"arguments", input.dump()}}}}})}},
       {{"role", "tool"}, {"tool_call_id", "toolu_1"}, {"content", "sunny"}}});
  const int64_t chat_tokens = chat_prompt_tokens(chat_messages, body["tools"]);
  EXPECT_EQ(j["usage"]["input_tokens"].get<int64_t>(), chat_tokens);
  // count_tokens counts the same prompt, the tools' rendering included.
  const json counted = ok("/v1/messages/count_tokens", {{"messages", messages}, {"tools", body["tools"]}});
  EXPECT_EQ(counted["input_tokens"].get<int64_t>(), chat_tokens);
  const json bare = ok("/v1/messages/count_tokens", {{"messages", json::array({messages[0]})}});
  const json with_tools = ok("/v1/messages/count_tokens", {{"messages", json::array({messages[0]})}, {"tools", body["tools"]}});
  EXPECT_GT(with_tools["input_tokens"].get<int64_t>(), bare["input_tokens"].get<int64_t>() + 20);
  // is_error reaches the model: the result reads differently.
  body["messages"][2]["content"][0]["is_error"] = true;
  const json err = ok("/v1/messages", body);
  EXPECT_GT(err["usage"]["input_tokens"].get<int64_t>(), chat_tokens);
}

TEST_F(ApiToolsTest, ToolTypesTheServerDoesNotRunAreRefusedByName) {
  auto refused = [&](const std::string& path, const json& body, const std::string& param, const std::string& says) {
    auto r = send(path, body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << body.dump() << " -> " << r->body;
    const json j = json::parse(r->body);
    const std::string message = j["error"]["message"];
    EXPECT_NE(message.find(says), std::string::npos) << message;
    if (path == "/v1/responses") {
      EXPECT_EQ(j["error"]["param"], param) << r->body;
    }
    else EXPECT_NE(message.find("'" + param + "'"), std::string::npos) << message;
  };
  json b = responses_body("auto", 0);
  b["tools"] = json::array({{{"type", "web_search"}}});
  refused("/v1/responses", b, "tools[0].type", "web_search");
  b = responses_body({{"type", "file_search"}}, 0);
  refused("/v1/responses", b, "tool_choice.type", "file_search");
  b = responses_body({{"type", "function"}, {"name", "nope"}}, 0);
  refused("/v1/responses", b, "tool_choice.name", "nope");
  b = responses_body("auto", 0);  // strict with auto: the chat reader's error, named as sent
  refused("/v1/responses", b, "tools[0].strict", "strict");
  b = responses_body("required", 0);
  b["text"] = {{"format", {{"type", "json_object"}}}};
  refused("/v1/responses", b, "tool_choice", "text.format");
  b = responses_body("required", 0);
  b["tools"][1]["name"] = "bad name";
  refused("/v1/responses", b, "tools[1].name", "bad name");

  json m = messages_body({{"type", "auto"}}, 0);
  m["tools"].push_back({{"type", "web_search_20250305"}, {"name", "web_search"}});
  refused("/v1/messages", m, "tools[2].type", "web_search_20250305");
  m = messages_body({{"type", "tool"}, {"name", "nope"}}, 0);
  refused("/v1/messages", m, "tool_choice.name", "nope");
  m = messages_body({{"type", "auto"}}, 0);
  m["tools"][0]["input_schema"] = "object";
  refused("/v1/messages", m, "tools[0].input_schema", "JSON Schema");
  m = messages_body({{"type", "auto"}}, 0);
  m["messages"].push_back({{"role", "assistant"},
                           {"content", json::array({{{"type", "tool_use"}, {"id", "t"}, {"name", "get_time"}, {"input", json::object()}}})}});
  refused("/v1/messages", m, "messages[1].content", "tool_result");
}

}  // namespace
}  // namespace triattn::server::test
