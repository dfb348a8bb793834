// Every top-level field of OpenAI's chat completions and completions request bodies (as the
// API reference and the official client's types list them), and the llama.cpp ones the server
// also takes, each tagged with what the server does with it, and checked: a non-default value
// of an honoured field changes the parsed request (what the engine runs, or what the reply
// echoes); a checked-only field is accepted with its type and refused with another; a refused
// field gets 400 naming it. A field name the server does not know is refused by name too.
#include <filesystem>

#include <gtest/gtest.h>
#include <unistd.h>

#include "model/maker.h"
#include "server/api_error.h"
#include "server/completion_request.h"
#include "server/messages_api.h"
#include "server/responses_api.h"
#include "server/tool_fields.h"

namespace triattn::server {
namespace {

using json = nlohmann::json;

enum class Use {
  Honoured,  // a non-default value changes the parsed request
  Checked,   // accepted with its type (it selects or tracks nothing here), refused with another
  Refused,   // a non-default value gets 400 naming the field
};

struct AuditField {
  const char* name;
  Use use;
  json value;        // non-default (Checked: a valid one)
  json also = nullptr;  // fields both bodies carry (what this one needs, e.g. logprobs for top_logprobs)
  json wrong = nullptr;  // Checked: a value of the wrong type
};

const std::vector<AuditField>& audit_chat_fields() {
  static const std::vector<AuditField> fields = {
      {"messages", Use::Honoured, json::array({{{"role", "user"}, {"content", "another"}}})},
      {"model", Use::Checked, "gpt-4o", nullptr, 5},
      {"audio", Use::Refused, {{"voice", "alloy"}, {"format", "wav"}}},
      {"frequency_penalty", Use::Honoured, 0.5},
      {"function_call", Use::Refused, "auto"},
      {"functions", Use::Refused, json::array({{{"name", "f"}}})},
      {"logit_bias", Use::Honoured, {{"5", -100}}},
      {"logprobs", Use::Honoured, true},
      {"max_completion_tokens", Use::Honoured, 7},
      {"max_tokens", Use::Honoured, 7},
      {"metadata", Use::Honoured, {{"k", "v"}}},
      {"modalities", Use::Refused, json::array({"text", "audio"})},
      {"moderation", Use::Refused, {{"model", "m"}}},
      {"n", Use::Honoured, 2},
      {"parallel_tool_calls", Use::Honoured, false, {{"tools", json::array({{{"type", "function"}, {"function", {{"name", "f"}}}}})}}},
      {"prediction", Use::Refused, {{"type", "content"}, {"content", "x"}}},
      {"presence_penalty", Use::Honoured, 0.5},
      {"prompt_cache_key", Use::Refused, "k"},
      {"prompt_cache_options", Use::Refused, json::object()},
      {"prompt_cache_retention", Use::Refused, "24h"},
      {"reasoning_effort", Use::Refused, "low"},
      {"response_format", Use::Honoured, {{"type", "json_object"}}},
      {"safety_identifier", Use::Checked, "u1", nullptr, 5},
      {"seed", Use::Honoured, 8},
      {"service_tier", Use::Refused, "flex"},
      {"stop", Use::Honoured, json::array({"x"})},
      {"store", Use::Refused, true},
      {"stream", Use::Honoured, true},
      {"stream_options", Use::Honoured, {{"include_usage", true}}},
      {"temperature", Use::Honoured, 0.5},
      {"tool_choice", Use::Honoured, "none", {{"tools", json::array({{{"type", "function"}, {"function", {{"name", "f"}}}}})}}},
      {"tools", Use::Honoured, json::array({{{"type", "function"}, {"function", {{"name", "f"}}}}})},
      {"top_logprobs", Use::Honoured, 3, {{"logprobs", true}}},
      {"top_p", Use::Honoured, 0.5},
      {"user", Use::Checked, "u1", nullptr, 5},
      {"verbosity", Use::Refused, "low"},
      {"web_search_options", Use::Refused, json::object()},
      // llama.cpp's.
      {"top_k", Use::Honoured, 5},
      {"min_p", Use::Honoured, 0.1},
      {"repeat_penalty", Use::Honoured, 1.3},
      {"repeat_last_n", Use::Honoured, 8},
      {"ignore_eos", Use::Honoured, true},
      {"grammar", Use::Honoured, "root ::= \"a\""},
      {"chat_template_kwargs", Use::Checked, {{"enable_thinking", false}}, nullptr, 5},
      {"kv_policy", Use::Honoured, "triattention"},
      {"stats", Use::Honoured, "auto", {{"kv_policy", "triattention"}}},
      {"kv_recall", Use::Honoured, true, {{"kv_policy", "streaming"}}},
  };
  return fields;
}

const std::vector<AuditField>& audit_completion_fields() {
  static const std::vector<AuditField> fields = {
      {"model", Use::Checked, "gpt-3.5-turbo-instruct", nullptr, 5},
      {"prompt", Use::Honoured, "another"},
      {"best_of", Use::Refused, 2},
      {"echo", Use::Honoured, true},
      {"frequency_penalty", Use::Honoured, -0.5},
      {"logit_bias", Use::Honoured, {{"5", 3}}},
      {"logprobs", Use::Honoured, 2},
      {"max_tokens", Use::Honoured, 7},
      {"n", Use::Honoured, 2},
      {"presence_penalty", Use::Honoured, -0.5},
      {"seed", Use::Honoured, 8},
      {"stop", Use::Honoured, "x"},
      {"stream", Use::Honoured, true},
      {"stream_options", Use::Honoured, {{"include_usage", true}}},
      {"suffix", Use::Refused, "the end"},
      {"temperature", Use::Honoured, 0.5},
      {"top_p", Use::Honoured, 0.5},
      {"user", Use::Checked, "u1", nullptr, 5},
      // llama.cpp's.
      {"top_k", Use::Honoured, 5},
      {"min_p", Use::Honoured, 0.1},
      {"repeat_penalty", Use::Honoured, 1.3},
      {"repeat_last_n", Use::Honoured, 8},
      {"ignore_eos", Use::Honoured, true},
      {"grammar", Use::Honoured, "root ::= \"a\""},
      {"response_format", Use::Honoured, {{"type", "json_object"}}},
      {"kv_policy", Use::Honoured, "triattention"},
      {"stats", Use::Honoured, "auto", {{"kv_policy", "triattention"}}},
      {"kv_recall", Use::Honoured, true, {{"kv_policy", "streaming"}}},
  };
  return fields;
}

// What the engine runs and the reply echoes, of a parsed request.
json audit_summary(const CompletionRequest& r) {
  const SamplerParams& s = r.sampling;
  json bias = json::array();
  for (const LogitBias& b : s.logit_bias) bias.push_back({b.id, b.bias});
  return {{"stream", r.stream},
          {"include_usage", r.include_usage},
          {"n", r.n},
          {"echo", r.echo},
          {"logprobs", r.logprobs},
          {"prompt", r.prompt},
          {"metadata", r.metadata},
          {"n_predict", r.options.n_predict},
          {"stop", r.options.stop},
          {"stop_at_eog", r.options.stop_at_eog},
          {"options_logprobs", r.options.logprobs},
          {"prompt_logprobs", r.options.prompt_logprobs},
          {"grammar", r.options.grammar != nullptr},
          {"sampling",
           {s.temperature, s.top_k, s.top_p, s.min_p, s.repeat_penalty, s.repeat_last_n, s.frequency_penalty,
            s.presence_penalty, bias, s.seed}},
          {"kv_policy", r.kv.policy},
          {"stats", r.kv.stats_path},
          {"kv_recall", r.kv.recall.on},
          {"tools", r.tools ? json{{"n", r.tools->tools.size()},
                                   {"choice", static_cast<int>(r.tools->choice)},
                                   {"parallel", r.tools->parallel}}
                            : json(nullptr)}};
}

// A random-weight model with a byte-fallback vocabulary, which can spell any grammar.
class RequestFieldsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::filesystem::temp_directory_path() / ("triattn-fields-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    write_random_gguf(model_preset("tiny-llama"), MakerOptions{}, (dir_ / "m.gguf").string());
    model_ = Model::load((dir_ / "m.gguf").string());
    // Qwen3's template: one with a tool-call syntax, so that the tool fields can be honoured.
    chat_prompt_ = std::make_unique<ChatPrompt>(
        model_->tokenizer(), model_->path(),
        ChatPromptOptions{.template_path = std::string(TRIATTN_SHARED_DIR) + "/chat-templates/Qwen-Qwen3-0.6B.jinja"},
        nullptr);
  }
  static void TearDownTestSuite() {
    chat_prompt_.reset();
    model_.reset();
    std::filesystem::remove_all(dir_);
  }
  static json base(bool chat) {
    json b = {{"seed", 7}};
    if (chat)
      b["messages"] = json::array({{{"role", "user"}, {"content", "hello"}}});
    else
      b["prompt"] = "hello";
    return b;
  }
  static CompletionRequest parse(const json& body, bool chat) {
    return parse_completion_request(body, chat, *model_, *chat_prompt_, RequestDefaults{});
  }
  // The ApiError a body gets ("" param and message when it is accepted).
  static ApiError refusal(const json& body, bool chat) {
    try {
      parse(body, chat);
    } catch (const ApiError& e) {
      return e;
    }
    return ApiError(0, "");
  }
  static void audit(const std::vector<AuditField>& fields, bool chat) {
    for (const AuditField& f : fields) {
      SCOPED_TRACE(std::string(chat ? "chat " : "completions ") + f.name);
      json without = base(chat), with = base(chat);
      if (!f.also.is_null())
        for (auto it = f.also.begin(); it != f.also.end(); ++it) without[it.key()] = with[it.key()] = it.value();
      with[f.name] = f.value;
      const ApiError e = refusal(with, chat);
      switch (f.use) {
        case Use::Honoured:
          ASSERT_EQ(e.status, 0) << e.what();
          EXPECT_NE(audit_summary(parse(with, chat)), audit_summary(parse(without, chat)));
          break;
        case Use::Checked: {
          EXPECT_EQ(e.status, 0) << e.what();
          json wrong = base(chat);
          wrong[f.name] = f.wrong;
          const ApiError w = refusal(wrong, chat);
          EXPECT_EQ(w.status, 400);
          EXPECT_EQ(w.param, f.name);
          break;
        }
        case Use::Refused:
          EXPECT_EQ(e.status, 400);
          EXPECT_EQ(e.param, f.name);
          EXPECT_NE(std::string(e.what()).find(f.name), std::string::npos) << e.what();
          // null is every field's absence.
          with[f.name] = nullptr;
          EXPECT_EQ(refusal(with, chat).status, 0);
          break;
      }
    }
  }
  static inline std::filesystem::path dir_;
  static inline std::shared_ptr<const Model> model_;
  static inline std::unique_ptr<ChatPrompt> chat_prompt_;
};

TEST_F(RequestFieldsTest, EveryChatFieldIsHonouredOrRefusedByName) { audit(audit_chat_fields(), true); }

TEST_F(RequestFieldsTest, EveryCompletionsFieldIsHonouredOrRefusedByName) { audit(audit_completion_fields(), false); }

// The tool fields of the Responses and Messages APIs, in their own shapes, are honoured too:
// each non-default value changes the parsed request as chat's does.
TEST_F(RequestFieldsTest, ResponsesAndMessagesToolFieldsAreHonoured) {
  const ResponseStore store(4);
  auto responses = [&](const json& body) {
    return audit_summary(parse_responses_request(body, body.dump(), *model_, *chat_prompt_, RequestDefaults{}, store).gen);
  };
  auto messages = [&](const json& body) {
    const std::string raw = body.dump();
    return audit_summary(parse_messages_request(body, &raw, *model_, *chat_prompt_, RequestDefaults{}, false).gen);
  };
  const json r_tools = json::array({{{"type", "function"}, {"name", "f"}, {"parameters", {{"type", "object"}}}}});
  const json m_tools = json::array({{{"name", "f"}, {"input_schema", {{"type", "object"}}}}});
  const json r_base = {{"input", "hello"}, {"seed", 7}};
  const json m_base = {{"messages", json::array({{{"role", "user"}, {"content", "hello"}}})}, {"max_tokens", 4}};
  // field, value, the fields both bodies carry
  const std::vector<std::tuple<std::string, json, json>> r_fields = {
      {"tools", r_tools, json::object()},
      {"tool_choice", "none", {{"tools", r_tools}}},
      {"parallel_tool_calls", false, {{"tools", r_tools}}}};
  for (const auto& [name, value, also] : r_fields) {
    SCOPED_TRACE("responses " + name);
    json without = r_base, with = r_base;
    without.update(also);
    with.update(also);
    with[name] = value;
    EXPECT_NE(responses(with), responses(without));
  }
  const std::vector<std::tuple<std::string, json, json>> m_fields = {
      {"tools", m_tools, json::object()},
      {"tool_choice", {{"type", "none"}}, {{"tools", m_tools}}},
      {"tool_choice", {{"type", "auto"}, {"disable_parallel_tool_use", true}}, {{"tools", m_tools}}}};
  for (const auto& [name, value, also] : m_fields) {
    SCOPED_TRACE("messages " + name + " " + value.dump());
    json without = m_base, with = m_base;
    without.update(also);
    with.update(also);
    with[name] = value;
    EXPECT_NE(messages(with), messages(without));
  }
}

TEST_F(RequestFieldsTest, UnknownFieldsAndOtherEndpointsFieldsAreRefusedByName) {
  const std::vector<std::pair<bool, std::string>> unknown = {
      {true, "frequency_penalties"}, {false, "n_predict"}, {true, "cache_prompt"},
      {false, "messages"},           {false, "metadata"},  {true, "echo"},
      {true, "prompt"},              {false, "top_logprobs"}};
  for (const auto& [chat, name] : unknown) {
    json body = base(chat);
    body[name] = nullptr;  // even null: the name itself is not known
    const ApiError e = refusal(body, chat);
    EXPECT_EQ(e.status, 400) << name;
    EXPECT_EQ(e.param, name);
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
  }
  // The KV knobs are fields too.
  json body = base(false);
  body["kv_policy"] = "triattention";
  body["kv_budget"] = 64;
  body["divide_length"] = 16;
  EXPECT_EQ(refusal(body, false).status, 0) << refusal(body, false).what();
}

TEST_F(RequestFieldsTest, RefusedFieldsAcceptTheValuesThatAskForNothing) {
  const std::vector<std::pair<std::string, json>> nothing = {
      {"tools", json::array()}, {"tool_choice", "none"},     {"functions", json::array()},
      {"function_call", "none"}, {"store", false},           {"modalities", json::array({"text"})},
      {"service_tier", "auto"}};
  for (const auto& [name, value] : nothing) {
    json body = base(true);
    body[name] = value;
    EXPECT_EQ(refusal(body, true).status, 0) << name << ": " << refusal(body, true).what();
  }
  json body = base(false);
  body["best_of"] = 1;
  body["suffix"] = "";
  EXPECT_EQ(refusal(body, false).status, 0) << refusal(body, false).what();
}

TEST_F(RequestFieldsTest, PenaltiesLogitBiasAndMetadataAreChecked) {
  const int64_t vocab = model_->config().vocab_size;
  const std::vector<std::pair<json, std::string>> bad = {
      {{{"frequency_penalty", 2.5}}, "frequency_penalty"},
      {{{"presence_penalty", -2.01}}, "presence_penalty"},
      {{{"presence_penalty", "1"}}, "presence_penalty"},
      {{{"logit_bias", {{std::to_string(vocab), 1}}}}, "logit_bias"},
      {{{"logit_bias", {{"-1", 1}}}}, "logit_bias"},
      {{{"logit_bias", {{"a", 1}}}}, "logit_bias"},
      {{{"logit_bias", {{"3", 101}}}}, "logit_bias"},
      {{{"logit_bias", {{"3", "1"}}}}, "logit_bias"},
      {{{"logit_bias", json::array({1})}}, "logit_bias"},
      {{{"metadata", {{"k", 1}}}}, "metadata"},
      {{{"metadata", {{std::string(65, 'k'), "v"}}}}, "metadata"},
      {{{"metadata", {{"k", std::string(513, 'v')}}}}, "metadata"},
      {{{"metadata", "k"}}, "metadata"},
      {{{"stream_options", {{"include_obfuscation", true}}}}, "stream_options.include_obfuscation"},
  };
  for (const auto& [fields, param] : bad) {
    json body = base(true);
    body.update(fields);
    const ApiError e = refusal(body, true);
    EXPECT_EQ(e.status, 400) << fields.dump();
    EXPECT_EQ(e.param, param) << fields.dump() << ": " << e.what();
  }
  json many = json::object();
  for (int i = 0; i < 17; ++i) many["k" + std::to_string(i)] = "v";
  json body = base(true);
  body["metadata"] = many;
  EXPECT_EQ(refusal(body, true).param, "metadata");
  many.erase("k16");
  body["metadata"] = many;
  EXPECT_EQ(parse(body, true).metadata, many);
  body = base(true);
  body.update({{"logit_bias", {{"0", -100}, {std::to_string(vocab - 1), 100}}},
               {"frequency_penalty", -2},
               {"presence_penalty", 2}});
  const CompletionRequest r = parse(body, true);
  ASSERT_EQ(r.sampling.logit_bias.size(), 2u);
  EXPECT_EQ(r.sampling.frequency_penalty, -2.0f);
  EXPECT_EQ(r.sampling.presence_penalty, 2.0f);
}

}  // namespace
}  // namespace triattn::server
