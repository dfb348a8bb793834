// Tool calls through the server, on bytelm-2k (a byte-level Qwen3) with Qwen3's own chat
// template: tool_choice "required" or a named function makes every reply, at temperature 1,
// a call whose arguments satisfy the function's schema, read back into message.tool_calls
// (streamed: delta.tool_calls that reassemble to the same call); the tools and the tool
// history reach the template as transformers passes them; and every bad field is a 400
// naming it.
#include "server_test_fixture.h"

namespace triattn::server::test {
namespace {

using ojson = nlohmann::ordered_json;

const std::string kToolsTemplate = std::string(TRIATTN_SHARED_DIR) + "/chat-templates/Qwen-Qwen3-0.6B.jinja";

json tools_weather_and_time() {
  return json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
      "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 10},
        "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city", "days"],
        "additionalProperties": false}}},
    {"type": "function", "function": {"name": "get_time", "description": "The time now",
      "parameters": {"type": "object", "properties": {"utc": {"type": "boolean"}}, "required": ["utc"],
        "additionalProperties": false}}}])");
}

// "" when the call is one of tools_weather_and_time()'s, with arguments its schema allows.
std::string tools_call_violation(const json& name, const json& arguments) {
  if (!name.is_string() || !arguments.is_string()) return "name and arguments must be strings";
  const json a = json::parse(arguments.get<std::string>(), nullptr, false);
  if (!a.is_object()) return "arguments are not a JSON object: " + arguments.get<std::string>();
  if (name == "get_weather") {
    if (a.size() != 2 || !a.contains("city") || !a["city"].is_string() || !a.contains("days") ||
        !a["days"].is_number_integer() || a["days"] < 1 || a["days"] > 7)
      return "get_weather arguments: " + a.dump();
    size_t n = 0;
    for (unsigned char c : a["city"].get<std::string>()) n += (c & 0xC0) != 0x80;
    if (n > 10) return "city too long: " + a.dump();
    return "";
  }
  if (name == "get_time") return a.size() == 1 && a.contains("utc") && a["utc"].is_boolean() ? "" : "get_time: " + a.dump();
  return "unknown function " + name.dump();
}

class ToolsServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = Model::load(std::string(TRIATTN_SHARED_DIR) + "/models/bytelm-2k/bytelm-2k-f32.gguf");
    ServerOptions o;
    o.port = 0;
    o.threads = 2;
    o.chat.template_path = kToolsTemplate;
    server_ = std::make_unique<Server>(model_, o);
    server_->start();
  }
  static void TearDownTestSuite() {
    server_.reset();
    model_.reset();
  }
  static httplib::Result post(const json& body) {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(120, 0);
    return c.Post("/v1/chat/completions", body.dump(), "application/json");
  }
  static json request(const json& tool_choice, int seed) {
    return {{"messages", json::array({{{"role", "user"}, {"content", "Weather in Oslo?"}}})},
            {"tools", tools_weather_and_time()},
            {"tool_choice", tool_choice},
            {"parallel_tool_calls", false},
            {"chat_template_kwargs", {{"enable_thinking", false}}},
            {"temperature", 1.0},
            {"seed", seed},
            {"max_tokens", 400}};
  }
  // The 400's error object, its param expected to be `param`.
  static json refused(const json& body, const std::string& param) {
    auto r = post(body);
    EXPECT_TRUE(r);
    if (!r) return json();
    EXPECT_EQ(r->status, 400) << r->body;
    const json e = json::parse(r->body)["error"];
    EXPECT_EQ(e["param"], param) << e;
    return e;
  }
  static inline std::shared_ptr<const Model> model_;
  static inline std::unique_ptr<Server> server_;
};

TEST_F(ToolsServerTest, RequiredGivesAValidCallAtTemperatureOne) {
  for (int seed = 1; seed <= 3; ++seed) {
    auto r = post(request("required", seed));
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json c = json::parse(r->body)["choices"][0];
    EXPECT_EQ(c["finish_reason"], "tool_calls") << c;
    EXPECT_TRUE(c["message"]["content"].is_null()) << c;
    ASSERT_EQ(c["message"]["tool_calls"].size(), 1u) << c;
    const json& call = c["message"]["tool_calls"][0];
    EXPECT_EQ(call["type"], "function");
    EXPECT_FALSE(call.contains("index")) << call;  // only stream deltas carry it
    EXPECT_TRUE(call["id"].get<std::string>().starts_with("call_")) << call;
    EXPECT_EQ(tools_call_violation(call["function"]["name"], call["function"]["arguments"]), "") << "seed " << seed;
  }
}

TEST_F(ToolsServerTest, NamedFunctionIsTheOneCalled) {
  for (int seed = 5; seed <= 5; ++seed) {
    auto r = post(request({{"type", "function"}, {"function", {{"name", "get_time"}}}}, seed));
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json c = json::parse(r->body)["choices"][0];
    ASSERT_EQ(c["message"]["tool_calls"].size(), 1u) << c;
    const json& f = c["message"]["tool_calls"][0]["function"];
    EXPECT_EQ(f["name"], "get_time");
    EXPECT_EQ(tools_call_violation(f["name"], f["arguments"]), "") << f;
  }
}

// Parallel calls go on while the model wants more: a reply that max_tokens cuts says
// "length", whole and streamed, even after complete calls (the last one may be cut).
TEST_F(ToolsServerTest, CallsCutByMaxTokensFinishWithLength) {
  json body = request({{"type", "function"}, {"function", {{"name", "get_time"}}}}, 2);
  body["parallel_tool_calls"] = true;
  body["max_tokens"] = 60;  // one get_time call is about 50 bytes: the second is cut
  auto r = post(body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json c = json::parse(r->body)["choices"][0];
  EXPECT_EQ(c["finish_reason"], "length") << c;
  body["stream"] = true;
  r = post(body);
  ASSERT_TRUE(r);
  EXPECT_NE(r->body.find("\"finish_reason\":\"length\""), std::string::npos) << r->body;
  EXPECT_EQ(r->body.find("\"finish_reason\":\"tool_calls\""), std::string::npos) << r->body;
}

TEST_F(ToolsServerTest, StreamedDeltasReassembleToTheSameCall) {
  json body = request("required", 3);
  auto whole = post(body);
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->status, 200) << whole->body;
  const json expected = json::parse(whole->body)["choices"][0]["message"]["tool_calls"][0]["function"];
  body["stream"] = true;
  auto r = post(body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  std::string id, name, arguments, finish, content;
  int id_chunks = 0;
  std::istringstream lines(r->body);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.starts_with("data: {")) continue;
    const json e = json::parse(line.substr(6));
    if (e["choices"].empty()) continue;
    const json& ch = e["choices"][0];
    if (ch["finish_reason"].is_string()) finish = ch["finish_reason"];
    const json& d = ch["delta"];
    if (d.contains("content") && d["content"].is_string()) content += d["content"].get<std::string>();
    if (!d.contains("tool_calls")) continue;
    for (const json& t : d["tool_calls"]) {
      EXPECT_EQ(t["index"], 0) << t;
      if (t.contains("id")) {
        ++id_chunks;
        id = t["id"];
        EXPECT_EQ(t["type"], "function");
        name += t["function"]["name"].get<std::string>();
      }
      arguments += t["function"].value("arguments", "");
    }
  }
  EXPECT_EQ(id_chunks, 1);
  EXPECT_TRUE(id.starts_with("call_")) << id;
  EXPECT_EQ(name, expected["name"]);
  EXPECT_EQ(arguments, expected["arguments"]);
  EXPECT_EQ(finish, "tool_calls");
  EXPECT_EQ(content, "");
}

// auto: what the model writes is read for calls (a GBNF grammar makes this model write a
// call after some text); streamed, the text comes as content and the call as deltas.
TEST_F(ToolsServerTest, AutoReadsCallsOutOfTheText) {
  json body = request("auto", 2);
  body["grammar"] = "root ::= \"Hi there.\\n<tool_call>\\n{\\\"name\\\": \\\"get_time\\\", \\\"arguments\\\": "
                    "{\\\"utc\\\": true}}\\n</tool_call>\"";
  auto r = post(body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json c = json::parse(r->body)["choices"][0];
  EXPECT_EQ(c["finish_reason"], "tool_calls") << c;
  EXPECT_EQ(c["message"]["content"], "Hi there.") << c;
  ASSERT_EQ(c["message"]["tool_calls"].size(), 1u) << c;
  EXPECT_EQ(c["message"]["tool_calls"][0]["function"], json({{"name", "get_time"}, {"arguments", "{\"utc\":true}"}}));

  body["stream"] = true;
  auto s = post(body);
  ASSERT_TRUE(s);
  ASSERT_EQ(s->status, 200) << s->body;
  std::string content, calls, finish;
  std::istringstream lines(s->body);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.starts_with("data: {")) continue;
    const json e = json::parse(line.substr(6));
    if (e["choices"].empty()) continue;
    const json& ch = e["choices"][0];
    if (ch["finish_reason"].is_string()) finish = ch["finish_reason"];
    if (ch["delta"].contains("content") && !ch["delta"]["content"].is_null())
      content += ch["delta"]["content"].get<std::string>();
    if (ch["delta"].contains("tool_calls")) calls += ch["delta"]["tool_calls"].dump() + "\n";
  }
  EXPECT_EQ(content, "Hi there.");
  EXPECT_EQ(finish, "tool_calls");
  EXPECT_NE(calls.find("\"name\":\"get_time\""), std::string::npos) << calls;
  EXPECT_NE(calls.find("\"arguments\":\"{\\\"utc\\\":true}\""), std::string::npos) << calls;

  // Two calls written: both read, or the first alone with parallel_tool_calls false.
  body["stream"] = false;
  body["grammar"] = "root ::= call \"\\n\" call\ncall ::= \"<tool_call>{\\\"name\\\": \\\"get_time\\\"}</tool_call>\"";
  for (const bool parallel : {true, false}) {
    body["parallel_tool_calls"] = parallel;
    auto p = post(body);
    ASSERT_TRUE(p);
    ASSERT_EQ(p->status, 200) << p->body;
    EXPECT_EQ(json::parse(p->body)["choices"][0]["message"]["tool_calls"].size(), parallel ? 2u : 1u) << p->body;
  }
}

// The prompt is what the template renders with the tools and the tool history: its length in
// bytes (this model's tokens) matches a render of the same conversation here.
TEST_F(ToolsServerTest, ToolsAndHistoryReachTheTemplate) {
  const json messages = json::parse(R"([
    {"role": "user", "content": "Weather in Oslo?"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\", \"days\": 1}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}])");
  json body = {{"messages", messages}, {"tools", tools_weather_and_time()}, {"max_tokens", 1}, {"temperature", 0}};
  auto r = post(body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const int64_t prompt_tokens = json::parse(r->body)["usage"]["prompt_tokens"];

  ChatPrompt cp(model_->tokenizer(), "", ChatPromptOptions{kToolsTemplate, false}, nullptr);
  ojson expected_messages = ojson::parse(R"([
    {"role": "user", "content": "Weather in Oslo?"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": {"city": "Oslo", "days": 1}}}]},
    {"role": "tool", "content": "sunny", "tool_call_id": "call_1"}])");
  const std::string text = cp.render(expected_messages, true, {{"tools", ojson::parse(tools_weather_and_time().dump())}});
  EXPECT_NE(text.find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"days\": 1}}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("<tool_response>\nsunny\n</tool_response>"), std::string::npos) << text;
  EXPECT_NE(text.find("\"name\": \"get_time\""), std::string::npos) << text;
  EXPECT_EQ(prompt_tokens, static_cast<int64_t>(cp.tokenize(text).size()));

  // tool_choice none: the tools are not shown.
  body["tool_choice"] = "none";
  auto n = post(body);
  ASSERT_TRUE(n);
  ASSERT_EQ(n->status, 200) << n->body;
  const std::string no_tools = cp.render(expected_messages, true);
  EXPECT_EQ(json::parse(n->body)["usage"]["prompt_tokens"].get<int64_t>(), static_cast<int64_t>(cp.tokenize(no_tools).size()));
}

TEST_F(ToolsServerTest, BadToolFieldsAreRefusedByName) {
  json b = request("required", 1);
  b["tools"][1]["type"] = "retrieval";
  EXPECT_NE(refused(b, "tools[1].type")["message"].get<std::string>().find("retrieval"), std::string::npos);
  b = request({{"type", "function"}, {"function", {{"name", "get_wether"}}}}, 1);
  EXPECT_NE(refused(b, "tool_choice.function.name")["message"].get<std::string>().find("get_wether"), std::string::npos);
  refused(request("sometimes", 1), "tool_choice");
  b = request("required", 1);
  b["tools"][0]["function"]["parameters"]["properties"]["city"]["unknownKeyword"] = 1;
  EXPECT_NE(refused(b, "tools")["message"].get<std::string>().find("unknownKeyword"), std::string::npos);
  b = request("required", 1);
  b["response_format"] = {{"type", "json_object"}};
  refused(b, "tool_choice");
  b = request("auto", 1);
  b["tools"][0]["function"]["strict"] = true;
  refused(b, "tools[0].function.strict");
  b = request("auto", 1);
  b["tools"][1]["function"]["name"] = "get_weather";
  refused(b, "tools[1].function.name");
  b = request("auto", 1);
  b.erase("tools");
  b["tool_choice"] = "required";
  refused(b, "tool_choice");
  b = request("auto", 1);
  b["functions"] = json::array({{{"name", "f"}}});
  refused(b, "functions");
  b = request("auto", 1);
  b["messages"].push_back({{"role", "tool"}, {"content", "sunny"}});
  refused(b, "messages[1].tool_call_id");
  b = request("auto", 1);
  b["messages"].push_back({{"role", "assistant"},
                           {"tool_calls", json::array({{{"id", "x"}, {"type", "function"},
                                                        {"function", {{"name", "get_time"}, {"arguments", "not json"}}}}})}});
  refused(b, "messages[1].tool_calls[0].function.arguments");
}

// A template that shows no call syntax is refused tools; a vocabulary that cannot
// spell the call (TinyStories-656K has no '{') is refused a forced call up front.
TEST_F(ToolsServerTest, ModelsThatCannotCallAreRefused) {
  auto tiny = Model::load(kModel);
  ServerOptions o;
  o.port = 0;
  o.threads = 1;
  o.chat.template_path = test::kNoToolsTemplate;
  Server plain(tiny, o);
  plain.start();
  httplib::Client c("127.0.0.1", plain.port());
  auto r = c.Post("/v1/chat/completions", request("auto", 1).dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_EQ(json::parse(r->body)["error"]["param"], "tools") << r->body;
  plain.stop();

  o.chat.template_path = kToolsTemplate;
  Server qwen(tiny, o);
  qwen.start();
  httplib::Client q("127.0.0.1", qwen.port());
  r = q.Post("/v1/chat/completions", request("required", 1).dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  const json e = json::parse(r->body)["error"];
  EXPECT_EQ(e["param"], "tools") << e;
  EXPECT_NE(e["message"].get<std::string>().find("cannot be generated with this model"), std::string::npos) << e;
  qwen.stop();
}

}  // namespace
}  // namespace triattn::server::test
