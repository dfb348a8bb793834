// Tool calls per model family: the syntax a template is recognised by, the calls read back
// from replies in each family's real format (whole, and streamed in pieces split at every
// byte), what the templates themselves write for a call in the history, and the grammars
// that force calls: they accept a well-formed call, refuse a wrong one, and what they accept
// parses back.
#include <gtest/gtest.h>

#include <map>

#include "chat/chat_template.h"
#include "core/error.h"
#include "chat/tool_call_grammar.h"
#include "chat/tool_call_syntax.h"
#include "chat/chat_test_util.h"
#include "grammar/gbnf.h"
#include "grammar/recognizer.h"

namespace triattn {
namespace {

using ojson = nlohmann::ordered_json;

std::vector<ToolSpec> tc_weather_tools() {
  ToolSpec w{"get_weather", "Weather in a city",
             ojson::parse(R"({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer",
                "minimum": 1, "maximum": 7}}, "required": ["city"]})")};
  ToolSpec t{"get_time", "The time now", ojson::parse(R"({"type": "object", "properties": {}})")};
  return {w, t};
}

std::string tc_calls_text(const std::vector<ParsedToolCall>& calls) {
  std::string s;
  for (const ParsedToolCall& c : calls) s += c.name + " " + c.arguments + "\n";
  return s;
}

// Parses `reply` whole, then streamed one byte at a time and in two pieces split at every
// byte: all give the same text and calls, and the whole parse is what is expected.
void tc_expect_parse(ToolSyntax syntax, const std::string& reply, const std::string& text, const std::string& calls) {
  const auto whole = ToolCallParser::parse(syntax, reply, tc_weather_tools());
  EXPECT_EQ(whole.text, text) << reply;
  EXPECT_EQ(tc_calls_text(whole.calls), calls) << reply;
  auto streamed = [&](const std::vector<size_t>& cuts) {
    ToolCallParser p(syntax, tc_weather_tools());
    ToolCallParser::Out all;
    size_t at = 0;
    for (size_t cut : cuts) {
      auto o = p.push(std::string_view(reply).substr(at, cut - at));
      all.text += o.text;
      all.calls.insert(all.calls.end(), o.calls.begin(), o.calls.end());
      at = cut;
    }
    auto o = p.finish();
    all.text += o.text;
    all.calls.insert(all.calls.end(), o.calls.begin(), o.calls.end());
    return all;
  };
  std::vector<size_t> bytes;
  for (size_t i = 1; i <= reply.size(); ++i) bytes.push_back(i);
  const auto by_byte = streamed(bytes);
  EXPECT_EQ(by_byte.text, text) << "byte by byte: " << reply;
  EXPECT_EQ(tc_calls_text(by_byte.calls), calls) << "byte by byte: " << reply;
  for (size_t cut = 0; cut <= reply.size(); ++cut) {
    const auto two = streamed({cut, reply.size()});
    ASSERT_EQ(two.text, text) << "split at " << cut << ": " << reply;
    ASSERT_EQ(tc_calls_text(two.calls), calls) << "split at " << cut << ": " << reply;
  }
}

TEST(ToolCalls, SyntaxOfEveryTemplate) {
  const std::map<std::string, ToolSyntax> expected = {
      {"Qwen-QwQ-32B", ToolSyntax::Hermes},
      {"Qwen-Qwen2.5-7B-Instruct", ToolSyntax::Hermes},
      {"Qwen-Qwen3-0.6B", ToolSyntax::Hermes},
      {"Qwen-Qwen3-4B-AWQ", ToolSyntax::Hermes},
      {"deepseek-ai-DeepSeek-R1-Distill-Llama-8B", ToolSyntax::DeepSeekR1},
      {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", ToolSyntax::DeepSeekR1},
      {"google-gemma-2-2b-it", ToolSyntax::None},
      {"meta-llama-Llama-3.1-8B-Instruct", ToolSyntax::Llama3},
      {"meta-llama-Llama-3.2-3B-Instruct", ToolSyntax::Llama3},
      {"meta-llama-Meta-Llama-3-8B-Instruct.initial-release", ToolSyntax::None},
      {"meta-llama-Meta-Llama-3-8B-Instruct", ToolSyntax::None},
      {"microsoft-Phi-3.5-mini-instruct", ToolSyntax::None},
      {"mistralai-Mistral-Nemo-Instruct-2407", ToolSyntax::Mistral},
      {"openai-gpt-oss-120b", ToolSyntax::Harmony},
  };
  const auto files = test::template_files();
  ASSERT_EQ(files.size(), expected.size());
  for (const auto& f : files) {
    const auto it = expected.find(f.stem().string());
    ASSERT_NE(it, expected.end()) << f;
    EXPECT_EQ(tool_syntax_name(tool_syntax_of_template(test::slurp(f))), std::string(tool_syntax_name(it->second))) << f;
  }
  for (const char* qwen35 : {"Qwen-Qwen3.5-2B", "Qwen-Qwen3.5-4B", "Qwen-Qwen3.6-27B"}) {
    const std::string src = test::slurp(std::string(TRIATTN_SOURCE_DIR) + "/tests/data/chat-templates/" + qwen35 + ".jinja");
    EXPECT_EQ(tool_syntax_of_template(src), ToolSyntax::QwenXml) << qwen35;
  }
}

TEST(ToolCalls, HermesJson) {
  tc_expect_parse(ToolSyntax::Hermes,
                  "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n"
                  "</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>",
                  "Let me check.\n\n", "get_weather {\"city\":\"Paris\",\"days\":2}\nget_time {}\n");
  // Arguments as a string holding JSON, as some fine-tunes write them.
  tc_expect_parse(ToolSyntax::Hermes, "<tool_call>{\"name\": \"get_time\", \"arguments\": \"{\\\"tz\\\": \\\"UTC\\\"}\"}</tool_call>",
                  "", "get_time {\"tz\":\"UTC\"}\n");
  // Not a call: passed on as the model wrote it.
  tc_expect_parse(ToolSyntax::Hermes, "a <tool_call>not json</tool_call> b", "a <tool_call>not json</tool_call> b", "");
  tc_expect_parse(ToolSyntax::Hermes, "no calls, just < and <tool text", "no calls, just < and <tool text", "");
}

TEST(ToolCalls, QwenXmlValuesByParameterType) {
  tc_expect_parse(ToolSyntax::QwenXml,
                  "<tool_call>\n<function=get_weather>\n<parameter=city>\n12\n</parameter>\n<parameter=days>\n3\n"
                  "</parameter>\n</function>\n</tool_call>",
                  "", "get_weather {\"city\":\"12\",\"days\":3}\n");
  // A parameter the tools do not type: JSON when it reads as JSON, else text.
  tc_expect_parse(ToolSyntax::QwenXml,
                  "Sure.\n\n<tool_call>\n<function=lookup>\n<parameter=q>\nmulti\nline\n</parameter>\n<parameter=opts>\n"
                  "{\"a\": [1, 2]}\n</parameter>\n</function>\n</tool_call>",
                  "Sure.\n\n", "lookup {\"q\":\"multi\\nline\",\"opts\":{\"a\":[1,2]}}\n");
  // The JSON form inside <tool_call> is read too.
  tc_expect_parse(ToolSyntax::QwenXml, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>", "",
                  "get_time {}\n");
}

TEST(ToolCalls, Llama3Json) {
  tc_expect_parse(ToolSyntax::Llama3, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", "",
                  "get_weather {\"city\":\"Paris\"}\n");
  tc_expect_parse(ToolSyntax::Llama3,
                  "<|python_tag|>{\"name\": \"get_time\", \"parameters\": {}}; {\"name\": \"get_weather\", \"parameters\": "
                  "{\"city\": \"Oslo\"}}",
                  "", "get_time {}\nget_weather {\"city\":\"Oslo\"}\n");
  tc_expect_parse(ToolSyntax::Llama3, "Hello {there}", "Hello {there}", "");
  tc_expect_parse(ToolSyntax::Llama3, "{\"not\": \"a call\"}", "{\"not\": \"a call\"}", "");
}

TEST(ToolCalls, MistralList) {
  tc_expect_parse(ToolSyntax::Mistral,
                  "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"get_time\", "
                  "\"arguments\": {}}]",
                  "", "get_weather {\"city\":\"Paris\"}\nget_time {}\n");
}

TEST(ToolCalls, DeepSeekR1Tokens) {
  tc_expect_parse(ToolSyntax::DeepSeekR1,
                  "<think>\nhmm\n</think>\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n"
                  "```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n"
                  "```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
                  "<think>\nhmm\n</think>\n\n", "get_weather {\"city\":\"Paris\"}\nget_time {}\n");
}

TEST(ToolCalls, HarmonyRecipient) {
  tc_expect_parse(ToolSyntax::Harmony,
                  "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary "
                  "to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>",
                  "<|channel|>analysis<|message|>Need weather.<|end|>", "get_weather {\"city\":\"Paris\"}\n");
  // The recipient before the channel, the reply cut at its end-of-generation token.
  tc_expect_parse(ToolSyntax::Harmony, " to=functions.get_time<|channel|>commentary json<|message|>{}", "", "get_time {}\n");
  tc_expect_parse(ToolSyntax::Harmony, "<|channel|>final<|message|>Hi there<|return|>",
                  "<|channel|>final<|message|>Hi there<|return|>", "");
}

// What a template writes for a call in the history is what the parser reads back.
void tc_expect_template_round_trip(const std::string& path, ToolSyntax syntax, const std::string& after,
                                   const std::string& before) {
  const ChatTemplate tpl(test::slurp(path));
  ojson messages = ojson::parse(R"([{"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": "", "tool_calls": [{"id": "call12345", "type": "function",
       "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}}]}])");
  ChatRenderOptions ro;
  ro.add_generation_prompt = false;
  ro.eos_token = "</s>";
  const std::string out = tpl.render(messages, ro);
  const size_t a = out.rfind(after);
  ASSERT_NE(a, std::string::npos) << out;
  const size_t b = out.find(before, a + after.size());
  ASSERT_NE(b, std::string::npos) << out;
  const auto parsed = ToolCallParser::parse(syntax, out.substr(a + after.size(), b - a - after.size()), tc_weather_tools());
  EXPECT_EQ(tc_calls_text(parsed.calls), "get_weather {\"city\":\"Paris\",\"days\":2}\n") << out;
}

TEST(ToolCalls, TemplatesWriteWhatTheParserReads) {
  const std::string shared = std::string(TRIATTN_SHARED_DIR) + "/chat-templates/";
  tc_expect_template_round_trip(shared + "Qwen-Qwen3-0.6B.jinja", ToolSyntax::Hermes, "<|im_start|>assistant\n",
                                "<|im_end|>");
  tc_expect_template_round_trip(std::string(TRIATTN_SOURCE_DIR) + "/tests/data/chat-templates/Qwen-Qwen3.5-4B.jinja",
                                ToolSyntax::QwenXml, "<|im_start|>assistant\n", "<|im_end|>");
  tc_expect_template_round_trip(shared + "meta-llama-Llama-3.1-8B-Instruct.jinja", ToolSyntax::Llama3,
                                "<|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>");
  tc_expect_template_round_trip(shared + "mistralai-Mistral-Nemo-Instruct-2407.jinja", ToolSyntax::Mistral, "Weather?[/INST]",
                                "</s>");
}

// The grammar accepts `good` whole (and `bad` never), and `good` parses back to `calls`.
void tc_expect_grammar(ToolSyntax syntax, const std::vector<ToolSpec>& tools, const ToolGrammarOptions& opt,
                       const std::string& good, const std::string& bad, const std::string& calls) {
  const grammar::Grammar g = grammar::parse_gbnf(tool_call_gbnf(syntax, tools, opt));
  const grammar::Recognizer rec(g);
  grammar::StackSet s = rec.initial();
  ASSERT_TRUE(rec.advance(s, good)) << good;
  EXPECT_TRUE(s.complete) << good;
  grammar::StackSet t = rec.initial();
  EXPECT_FALSE(rec.advance(t, bad) && t.complete) << bad;
  EXPECT_EQ(tc_calls_text(ToolCallParser::parse(syntax, good, tools).calls), calls);
}

TEST(ToolCalls, GrammarsForceCallsInEachSyntax) {
  const auto tools = tc_weather_tools();
  const ToolGrammarOptions one{false, ToolGrammarOptions::Reasoning::None};
  const ToolGrammarOptions many{true, ToolGrammarOptions::Reasoning::None};
  const std::string weather = "get_weather {\"city\":\"Paris\",\"days\":2}\n";
  tc_expect_grammar(ToolSyntax::Hermes, tools, many,
                    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>\n"
                    "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>",
                    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"days\": 2}}\n</tool_call>",
                    weather + "get_time {}\n");
  // Exactly one call: a second is refused; days out of range is refused.
  tc_expect_grammar(ToolSyntax::Hermes, tools, one,
                    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>",
                    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 9}}\n</tool_call>",
                    weather);
  tc_expect_grammar(ToolSyntax::Hermes, tools, one,
                    "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>",
                    "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": "
                    "\"get_time\", \"arguments\": {}}\n</tool_call>",
                    "get_time {}\n");
  tc_expect_grammar(ToolSyntax::Llama3, tools, one, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"days\": 2}}",
                    "{\"name\": \"get_wether\", \"parameters\": {}}", weather);
  tc_expect_grammar(ToolSyntax::Mistral, tools, many,
                    "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}]",
                    "[TOOL_CALLS][]", weather);
  tc_expect_grammar(ToolSyntax::DeepSeekR1, tools, {true, ToolGrammarOptions::Reasoning::Open},
                    "Let me see.\n</think>\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n"
                    "```json\n{\"city\": \"Paris\", \"days\": 2}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
                    "<｜tool▁calls▁begin｜><｜tool▁calls▁end｜>", weather);
  tc_expect_grammar(ToolSyntax::QwenXml, tools, one,
                    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n2\n"
                    "</parameter>\n</function>\n</tool_call>",
                    "<tool_call>\n<function=get_weather>\n<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>",
                    weather);
  tc_expect_grammar(ToolSyntax::Harmony, tools, many,
                    "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary "
                    "to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\", \"days\": 2}",
                    "<|channel|>final<|message|>Paris is sunny.", weather);
  // Thinking first, when the model likes.
  tc_expect_grammar(ToolSyntax::Hermes, tools, {false, ToolGrammarOptions::Reasoning::Optional},
                    "<think>\nWeather, so get_weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n"
                    "</tool_call>",
                    "Hello", "get_time {}\n");
}

TEST(ToolCalls, GrammarRefusesWhatItCannotForce) {
  ToolSpec odd{"odd", "", ojson::parse(R"({"type": "object", "properties": {"x": {"type": "string", "unknownKeyword": 1}}})")};
  EXPECT_THROW(tool_call_gbnf(ToolSyntax::Hermes, {odd}, {}), Error);
  ToolSpec not_object{"x", "", ojson::parse(R"({"type": "string"})")};
  EXPECT_THROW(tool_call_gbnf(ToolSyntax::Hermes, {not_object}, {}), Error);
  EXPECT_THROW(tool_call_gbnf(ToolSyntax::None, tc_weather_tools(), {}), Error);
  EXPECT_THROW(tool_call_gbnf(ToolSyntax::Hermes, {}, {}), Error);
}

TEST(ToolCalls, IdsAreFreshAndMistralsAreNineAlphanumerics) {
  const std::string a = new_tool_call_id(ToolSyntax::Hermes), b = new_tool_call_id(ToolSyntax::Hermes);
  EXPECT_TRUE(a.starts_with("call_"));
  EXPECT_NE(a, b);
  const std::string m = new_tool_call_id(ToolSyntax::Mistral);
  EXPECT_EQ(m.size(), 9u);
  for (char c : m) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c))) << m;
}

}  // namespace
}  // namespace triattn
