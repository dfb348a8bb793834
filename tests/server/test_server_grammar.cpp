// Constrained decoding through the server: response_format json_schema / json_object and a
// GBNF `grammar` on both endpoints, streamed or not, at temperature 1 on a random-weight
// model (whose every output must parse and validate), and the 400s: unsupported keywords
// and fields by name, grammars that do not parse, and a vocabulary that cannot spell what
// the grammar requires (TinyStories-656K has no token holding '{').
#include <filesystem>
#include <regex>

#include "model/maker.h"
#include "server_test_fixture.h"

namespace triattn::server::test {
namespace {

using ojson = nlohmann::ordered_json;

const char* kSchema = R"({"type": "object", "properties": {
  "name": {"type": "string", "minLength": 1, "maxLength": 6},
  "n": {"type": "integer", "minimum": -50, "maximum": 50},
  "ok": {"type": "boolean"},
  "color": {"enum": ["red", "green", null]},
  "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 3},
  "code": {"type": "string", "pattern": "^[A-Z]{2}\\d$"},
  "when": {"type": "string", "format": "date"},
  "score": {"type": ["integer", "null"], "exclusiveMinimum": 0, "exclusiveMaximum": 1000}},
  "required": ["name", "n", "ok", "color", "tags", "code"], "additionalProperties": false})";

size_t code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// Checks a reply against kSchema by hand (no validator library here); "" when valid.
std::string violation(const std::string& text) {
  ojson j;
  try {
    j = ojson::parse(text);
  } catch (const std::exception& e) {
    return std::string("not JSON: ") + e.what();
  }
  if (!j.is_object()) return "not an object";
  const std::vector<std::string> order = {"name", "n", "ok", "color", "tags", "code", "when", "score"};
  for (const char* k : {"name", "n", "ok", "color", "tags", "code"})
    if (!j.contains(k)) return std::string("missing ") + k;
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::find(order.begin(), order.end(), it.key()) == order.end()) return "extra property " + it.key();
  if (!j["name"].is_string() || code_points(j["name"]) < 1 || code_points(j["name"]) > 6) return "name";
  if (!j["n"].is_number_integer() || j["n"].get<int64_t>() < -50 || j["n"].get<int64_t>() > 50) return "n";
  if (!j["ok"].is_boolean()) return "ok";
  if (!(j["color"] == "red" || j["color"] == "green" || j["color"].is_null())) return "color";
  if (!j["tags"].is_array() || j["tags"].size() > 3) return "tags";
  for (const ojson& t : j["tags"])
    if (!t.is_string() || code_points(t) > 3) return "tags item";
  if (!j["code"].is_string() || !std::regex_match(j["code"].get<std::string>(), std::regex("[A-Z]{2}[0-9]"))) return "code";
  if (j.contains("when") &&
      (!j["when"].is_string() ||
       !std::regex_match(j["when"].get<std::string>(), std::regex("[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"))))
    return "when";
  if (j.contains("score") && !j["score"].is_null() &&
      (!j["score"].is_number_integer() || j["score"].get<int64_t>() <= 0 || j["score"].get<int64_t>() >= 1000))
    return "score";
  return "";
}

// The "data:" events of an SSE body ([DONE] left out).
std::vector<json> sse_events(const std::string& body) {
  std::vector<json> out;
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("data: ", 0) == 0 && line != "data: [DONE]") out.push_back(json::parse(line.substr(6)));
  return out;
}

// A random-weight model (tiny-llama shape, byte-fallback vocabulary of 512 ids) with room
// for long replies.
class GrammarServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::filesystem::temp_directory_path() / ("triattn-grammar-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    ModelConfig cfg = model_preset("tiny-llama");
    cfg.context_length = 4096;
    write_random_gguf(cfg, MakerOptions{}, (dir_ / "m.gguf").string());
    model_ = Model::load((dir_ / "m.gguf").string());
    ServerOptions o;
    o.port = 0;
    o.threads = 2;
    server_ = std::make_unique<Server>(model_, o);
    server_->start();
  }
  static void TearDownTestSuite() {
    server_.reset();
    model_.reset();
    std::filesystem::remove_all(dir_);
  }
  static httplib::Result post(const std::string& path, const json& body) {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(120, 0);
    return c.Post(path.c_str(), body.dump(), "application/json");
  }
  static json schema_format() {
    return {{"type", "json_schema"}, {"json_schema", {{"name", "t"}, {"strict", true}, {"schema", json::parse(kSchema)}}}};
  }
  static inline std::filesystem::path dir_;
  static inline std::shared_ptr<const Model> model_;
  static inline std::unique_ptr<Server> server_;
};

TEST_F(GrammarServerTest, JsonSchemaOutputsValidateAtTemperatureOne) {
  for (int seed = 1; seed <= 6; ++seed) {
    const bool chat = seed % 2 == 0;
    json body = {{"max_tokens", 3000}, {"temperature", 1.0}, {"seed", seed}, {"response_format", schema_format()}};
    if (chat)
      body["messages"] = json::array({{{"role", "user"}, {"content", "a record"}}});
    else
      body["prompt"] = "record:";
    auto r = post(chat ? "/v1/chat/completions" : "/v1/completions", body);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json j = json::parse(r->body);
    const json& c = j["choices"][0];
    const std::string text = chat ? c["message"]["content"].get<std::string>() : c["text"].get<std::string>();
    EXPECT_EQ(c["finish_reason"], "stop") << text;
    EXPECT_EQ(violation(text), "") << "seed " << seed << ": " << text;
    EXPECT_GT(j["usage"]["grammar_ms"].get<double>(), 0.0);
  }
}

TEST_F(GrammarServerTest, StreamedAndForkedChoicesValidate) {
  json body = {{"prompt", "x"}, {"max_tokens", 3000}, {"temperature", 1.0}, {"seed", 11}, {"n", 2},
               {"stream", true}, {"response_format", schema_format()}};
  auto r = post("/v1/completions", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  std::string text[2];
  for (const json& e : sse_events(r->body))
    if (e.is_object() && !e["choices"].empty()) text[e["choices"][0]["index"].get<int>()] += e["choices"][0]["text"].get<std::string>();
  for (const std::string& t : text) EXPECT_EQ(violation(t), "") << t;
}

TEST_F(GrammarServerTest, JsonObjectAndGbnf) {
  auto r = post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 3000}, {"temperature", 1.0}, {"seed", 3},
                                    {"response_format", {{"type", "json_object"}}}});
  ASSERT_EQ(r->status, 200) << r->body;
  // Any object: it may nest deep, so only its type is checked, when it finished.
  const json c = json::parse(r->body)["choices"][0];
  if (c["finish_reason"] == "stop") {
    EXPECT_TRUE(json::parse(c["text"].get<std::string>()).is_object()) << c["text"];
  }

  r = post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 50}, {"temperature", 1.0}, {"seed", 4},
                               {"grammar", "root ::= (\"yes\" | \"no\") \", \" [0-9]{2}"}});
  ASSERT_EQ(r->status, 200) << r->body;
  const json g = json::parse(r->body)["choices"][0];
  EXPECT_TRUE(std::regex_match(g["text"].get<std::string>(), std::regex("(yes|no), [0-9]{2}"))) << g["text"];
  EXPECT_EQ(g["finish_reason"], "stop");

  httplib::Client m("127.0.0.1", server_->port());
  const std::string metrics = m.Get("/metrics")->body;
  EXPECT_NE(metrics.find("triattn_grammar_mask_seconds_count"), std::string::npos);
  EXPECT_EQ(metrics.find("triattn_grammar_mask_seconds_count 0\n"), std::string::npos);
}

TEST_F(GrammarServerTest, GreedyFollowsTheGrammarToo) {
  auto r = post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 50}, {"temperature", 0},
                                    {"grammar", "root ::= \"A\" [bc]{3}"}});
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_TRUE(std::regex_match(json::parse(r->body)["choices"][0]["text"].get<std::string>(), std::regex("A[bc]{3}")));
}

// The 400s, on TinyStories-656K (the shared fixture's model).
class GrammarRefusalTest : public ServerTest {
 protected:
  static json error_of(Server& s, const json& body, const std::string& path = "/v1/completions") {
    auto r = post(s, path, body);
    EXPECT_EQ(r->status, 400) << r->body;
    return json::parse(r->body)["error"];
  }
};

TEST_F(GrammarRefusalTest, UnspellableUnsupportedAndMalformed) {
  auto s = start();
  json e = error_of(*s, {{"prompt", "x"}, {"response_format", {{"type", "json_object"}}}});
  EXPECT_NE(e["message"].get<std::string>().find("cannot be generated with this model"), std::string::npos) << e;
  EXPECT_NE(e["message"].get<std::string>().find("no token holds '{'"), std::string::npos) << e;
  EXPECT_EQ(e["param"], "response_format");

  e = error_of(*s, {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})},
                    {"response_format", {{"type", "json_schema"},
                                         {"json_schema", {{"name", "x"}, {"schema", {{"type", "string"}, {"uniqueItems", true}}}}}}}},
               "/v1/chat/completions");
  EXPECT_NE(e["message"].get<std::string>().find("the keyword 'uniqueItems' is not supported"), std::string::npos) << e;
  EXPECT_EQ(e["param"], "response_format.json_schema.schema");

  e = error_of(*s, {{"prompt", "x"}, {"response_format", {{"type", "xml"}}}});
  EXPECT_NE(e["message"].get<std::string>().find("'xml' is not supported"), std::string::npos) << e;
  e = error_of(*s, {{"prompt", "x"}, {"response_format", {{"type", "json_schema"}, {"json_schema", {{"schema", json::object()}, {"extra", 1}}}}}});
  EXPECT_NE(e["message"].get<std::string>().find("response_format.json_schema.extra"), std::string::npos) << e;
  e = error_of(*s, {{"prompt", "x"}, {"grammar", "root ::= \"a\" |"}, {"response_format", {{"type", "json_object"}}}});
  EXPECT_NE(e["message"].get<std::string>().find("cannot be combined"), std::string::npos) << e;
  e = error_of(*s, {{"prompt", "x"}, {"grammar", "root ::= (\"a\""}});
  EXPECT_NE(e["message"].get<std::string>().find("'grammar' is not a valid grammar: grammar: line 1"), std::string::npos) << e;
  EXPECT_EQ(e["param"], "grammar");
  e = error_of(*s, {{"prompt", "x"}, {"grammar", 5}});
  EXPECT_NE(e["message"].get<std::string>().find("must be a string"), std::string::npos) << e;
  // Tools stay refused by name.
  e = error_of(*s, {{"prompt", "x"}, {"tools", json::array({{{"type", "function"}}})}});
  EXPECT_EQ(e["param"], "tools");
}

TEST_F(GrammarRefusalTest, TextFormatAndASpellableGrammar) {
  auto s = start();
  auto r = post(*s, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 5}, {"response_format", {{"type", "text"}}}});
  EXPECT_EQ(r->status, 200) << r->body;
  // SentencePiece words carry their space: the grammar spells it.
  r = post(*s, "/v1/completions", {{"prompt", "Once upon a time,"}, {"max_tokens", 20}, {"temperature", 0},
                                    {"grammar", "root ::= \" there was\" (\" a cat\" | \" a dog\")"}});
  ASSERT_EQ(r->status, 200) << r->body;
  const json c = json::parse(r->body)["choices"][0];
  EXPECT_TRUE(c["text"] == " there was a cat" || c["text"] == " there was a dog") << c;
  EXPECT_EQ(c["finish_reason"], "stop");
}

}  // namespace
}  // namespace triattn::server::test
