// Real model chat templates (shared/chat-templates) rendered to the exact strings their
// Jinja source defines. Every expected string below was written by reading the template
// (trim_blocks + lstrip_blocks as transformers renders), not by running another renderer.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "core/error.h"

namespace triattn {
namespace {

using ojson = nlohmann::ordered_json;

std::string read_template(const std::string& name) {
  std::string path = std::string(TRIATTN_SHARED_DIR) + "/chat-templates/" + name;
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const char* kSys = "You are a helpful assistant.";

// system + user + assistant + user; the last user turn ends in a newline so templates that
// `trim` content and those that do not give different text.
ojson conversation(bool with_system = true) {
  ojson m = ojson::array();
  if (with_system) m.push_back({{"role", "system"}, {"content", kSys}});
  m.push_back({{"role", "user"}, {"content", "Hello!"}});
  m.push_back({{"role", "assistant"}, {"content", "Hi there! How can I help?"}});
  m.push_back({{"role", "user"}, {"content", "What is 2+2?\n"}});
  return m;
}

ojson weather_tool() {
  return ojson::parse(R"({"type": "function", "function": {"name": "get_weather", "description": "Get weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})");
}

const char* kWeatherToolJson =
    R"({"type": "function", "function": {"name": "get_weather", "description": "Get weather", )"
    R"("parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})";

std::string render_template(const std::string& file, const ojson& messages, ChatRenderOptions opt = {}) {
  return ChatTemplate(read_template(file)).render(messages, opt);
}

// Expects raise_exception with exactly `msg`.
void expect_raises(const std::string& file, const ojson& messages, const std::string& msg) {
  try {
    render_template(file, messages);
    FAIL() << file << ": expected raise_exception(\"" << msg << "\")";
  } catch (const ChatTemplateRaised& e) {
    EXPECT_EQ(std::string(e.what()), msg);
  }
}

// ---------------------------------------------------------------- Qwen (ChatML)

const char* kChatMLConversation =
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "<|im_start|>user\nHello!<|im_end|>\n"
    "<|im_start|>assistant\nHi there! How can I help?<|im_end|>\n"
    "<|im_start|>user\nWhat is 2+2?\n<|im_end|>\n"
    "<|im_start|>assistant\n";

TEST(ChatTemplates, Qwen25Conversation) {
  EXPECT_EQ(render_template("Qwen-Qwen2.5-7B-Instruct.jinja", conversation()), kChatMLConversation);
}

TEST(ChatTemplates, Qwen25DefaultSystemPrompt) {
  ojson m = ojson::array({{{"role", "user"}, {"content", "Hi"}}});
  EXPECT_EQ(render_template("Qwen-Qwen2.5-7B-Instruct.jinja", m),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplates, Qwen25Tools) {
  ChatRenderOptions opt;
  opt.extra["tools"] = ojson::array({weather_tool()});
  ojson m = ojson::array({{{"role", "user"}, {"content", "Weather in Paris?"}}});
  std::string expected = std::string("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.") +
                         "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
                         "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
                         kWeatherToolJson +
                         "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
                         "within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, "
                         "\"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n"
                         "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n";
  EXPECT_EQ(render_template("Qwen-Qwen2.5-7B-Instruct.jinja", m, opt), expected);
}

class Qwen3 : public ::testing::TestWithParam<const char*> {};

TEST_P(Qwen3, Conversation) { EXPECT_EQ(render_template(GetParam(), conversation()), kChatMLConversation); }

TEST_P(Qwen3, EnableThinkingFalseAddsEmptyThinkBlock) {
  ChatRenderOptions opt;
  opt.extra["enable_thinking"] = false;
  EXPECT_EQ(render_template(GetParam(), conversation(), opt), std::string(kChatMLConversation) + "<think>\n\n</think>\n\n");
  opt.extra["enable_thinking"] = true;  // only `false` switches it off
  EXPECT_EQ(render_template(GetParam(), conversation(), opt), kChatMLConversation);
}

TEST_P(Qwen3, ThinkingStrippedFromHistory) {
  ojson m = ojson::array({{{"role", "user"}, {"content", "Hi"}},
                          {{"role", "assistant"}, {"content", "<think>\nLet me think.\n</think>\n\nHello!"}},
                          {{"role", "user"}, {"content", "Bye"}}});
  EXPECT_EQ(render_template(GetParam(), m),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n"
            "<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
}

TEST_P(Qwen3, ReasoningContentKeptAfterLastQuery) {
  ojson m = ojson::array({{{"role", "user"}, {"content", "Hi"}},
                          {{"role", "assistant"}, {"content", "Hello!"}, {"reasoning_content", "Greet back."}}});
  ChatRenderOptions opt;
  opt.add_generation_prompt = false;
  EXPECT_EQ(render_template(GetParam(), m, opt),
            "<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n<think>\nGreet back.\n</think>\n\nHello!<|im_end|>\n");
}

TEST_P(Qwen3, ToolsToolCallAndToolResponse) {
  ChatRenderOptions opt;
  opt.extra["tools"] = ojson::array({weather_tool()});
  ojson call = {{"type", "function"}, {"function", {{"name", "get_weather"}, {"arguments", {{"city", "Paris"}}}}}};
  ojson m = ojson::array({{{"role", "system"}, {"content", kSys}},
                          {{"role", "user"}, {"content", "Weather in Paris?"}},
                          {{"role", "assistant"}, {"content", ""}, {"tool_calls", ojson::array({call})}},
                          {{"role", "tool"}, {"content", "{\"temp\": 18}"}}});
  std::string expected = std::string("<|im_start|>system\nYou are a helpful assistant.\n\n") +
                         "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
                         "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
                         kWeatherToolJson +
                         "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
                         "within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, "
                         "\"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n"
                         "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
                         "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                         "{\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n"
                         "<|im_start|>user\n<tool_response>\n{\"temp\": 18}\n</tool_response><|im_end|>\n"
                         "<|im_start|>assistant\n";
  EXPECT_EQ(render_template(GetParam(), m, opt), expected);
}

INSTANTIATE_TEST_SUITE_P(Both, Qwen3,
                         ::testing::Values("Qwen-Qwen3-0.6B.jinja", "Qwen-Qwen3-4B-AWQ.jinja"));

TEST(ChatTemplates, Qwen3NonStringContentOnlyInNewerTemplate) {
  // The 0.6B (newer) template renders list content as ''; the April-2025 one calls
  // .startswith on it, which a list does not have.
  ojson m = ojson::array({{{"role", "user"}, {"content", ojson::array({{{"type", "text"}, {"text", "x"}}})}}});
  EXPECT_EQ(render_template("Qwen-Qwen3-0.6B.jinja", m), "<|im_start|>user\n<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_THROW(render_template("Qwen-Qwen3-4B-AWQ.jinja", m), Error);
}

// ---------------------------------------------------------------- DeepSeek-R1 distills

class DeepSeekR1 : public ::testing::TestWithParam<const char*> {};

ChatRenderOptions deepseek_opts() {
  ChatRenderOptions opt;
  opt.bos_token = "<｜begin▁of▁sentence｜>";
  opt.eos_token = "<｜end▁of▁sentence｜>";
  return opt;
}

TEST_P(DeepSeekR1, Conversation) {
  EXPECT_EQ(render_template(GetParam(), conversation(), deepseek_opts()),
            "<｜begin▁of▁sentence｜>You are a helpful assistant.<｜User｜>Hello!"
            "<｜Assistant｜>Hi there! How can I help?<｜end▁of▁sentence｜>"
            "<｜User｜>What is 2+2?\n<｜Assistant｜><think>\n");
}

TEST_P(DeepSeekR1, ThinkingStrippedFromHistory) {
  ojson m = ojson::array({{{"role", "user"}, {"content", "Hi"}},
                          {{"role", "assistant"}, {"content", "<think>\nLet me think.\n</think>\n\nHello!"}},
                          {{"role", "user"}, {"content", "Bye"}}});
  // Only the text after </think> is kept, newlines included (this template does not lstrip).
  EXPECT_EQ(render_template(GetParam(), m, deepseek_opts()),
            "<｜begin▁of▁sentence｜><｜User｜>Hi<｜Assistant｜>\n\nHello!<｜end▁of▁sentence｜>"
            "<｜User｜>Bye<｜Assistant｜><think>\n");
}

TEST_P(DeepSeekR1, NoGenerationPrompt) {
  ChatRenderOptions opt = deepseek_opts();
  opt.add_generation_prompt = false;
  ojson m = ojson::array({{{"role", "user"}, {"content", "Hi"}}});
  EXPECT_EQ(render_template(GetParam(), m, opt), "<｜begin▁of▁sentence｜><｜User｜>Hi");
}

INSTANTIATE_TEST_SUITE_P(Both, DeepSeekR1,
                         ::testing::Values("deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja",
                                           "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"));

// ---------------------------------------------------------------- Gemma 2

TEST(ChatTemplates, Gemma2Conversation) {
  ChatRenderOptions opt;
  opt.bos_token = "<bos>";
  EXPECT_EQ(render_template("google-gemma-2-2b-it.jinja", conversation(false), opt),
            "<bos><start_of_turn>user\nHello!<end_of_turn>\n"
            "<start_of_turn>model\nHi there! How can I help?<end_of_turn>\n"
            "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n"
            "<start_of_turn>model\n");
}

TEST(ChatTemplates, Gemma2RejectsSystemRole) {
  // The standard system+user+assistant+user conversation is refused by the template itself.
  expect_raises("google-gemma-2-2b-it.jinja", conversation(), "System role not supported");
}

TEST(ChatTemplates, Gemma2RejectsNonAlternatingRoles) {
  ojson m = ojson::array({{{"role", "user"}, {"content", "a"}}, {{"role", "user"}, {"content", "b"}}});
  expect_raises("google-gemma-2-2b-it.jinja", m, "Conversation roles must alternate user/assistant/user/assistant/...");
}

// ---------------------------------------------------------------- Llama 3.x

const char* kLlama31Conversation =
    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
    "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
    "You are a helpful assistant.<|eot_id|>"
    "<|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\nHi there! How can I help?<|eot_id|>"
    "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n";

ChatRenderOptions llama_opts() {
  ChatRenderOptions opt;
  opt.bos_token = "<|begin_of_text|>";
  opt.eos_token = "<|eot_id|>";
  return opt;
}

TEST(ChatTemplates, Llama31Conversation) {
  EXPECT_EQ(render_template("meta-llama-Llama-3.1-8B-Instruct.jinja", conversation(), llama_opts()), kLlama31Conversation);
}

const char* kWeatherToolIndented =
    "{\n"
    "    \"type\": \"function\",\n"
    "    \"function\": {\n"
    "        \"name\": \"get_weather\",\n"
    "        \"description\": \"Get weather\",\n"
    "        \"parameters\": {\n"
    "            \"type\": \"object\",\n"
    "            \"properties\": {\n"
    "                \"city\": {\n"
    "                    \"type\": \"string\"\n"
    "                }\n"
    "            },\n"
    "            \"required\": [\n"
    "                \"city\"\n"
    "            ]\n"
    "        }\n"
    "    }\n"
    "}";

TEST(ChatTemplates, Llama31ToolsInFirstUserMessage) {
  ChatRenderOptions opt = llama_opts();
  opt.extra["tools"] = ojson::array({weather_tool()});
  ojson m = ojson::array({{{"role", "system"}, {"content", kSys}}, {{"role", "user"}, {"content", "Weather in Paris?"}}});
  std::string expected = std::string(
                             "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
                             "Environment: ipython\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
                             "You are a helpful assistant.<|eot_id|>"
                             "<|start_header_id|>user<|end_header_id|>\n\n"
                             "Given the following functions, please respond with a JSON for a function call "
                             "with its proper arguments that best answers the given prompt.\n\n"
                             "Respond in the format {\"name\": function name, \"parameters\": dictionary of argument "
                             "name and its value}.Do not use variables.\n\n") +
                         kWeatherToolIndented +
                         "\n\nWeather in Paris?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n";
  EXPECT_EQ(render_template("meta-llama-Llama-3.1-8B-Instruct.jinja", m, opt), expected);
}

TEST(ChatTemplates, Llama31ToolCallAndToolResult) {
  ojson call = {{"function", {{"name", "get_weather"}, {"arguments", {{"city", "Paris"}}}}}};
  ojson m = ojson::array({{{"role", "user"}, {"content", "Weather?"}},
                          {{"role", "assistant"}, {"tool_calls", ojson::array({call})}},
                          {{"role", "tool"}, {"content", "18C"}}});
  ChatRenderOptions opt = llama_opts();
  opt.extra["date_string"] = "01 Feb 2025";
  // A str is `iterable` in Jinja, so string tool content goes through tojson (quoted).
  EXPECT_EQ(render_template("meta-llama-Llama-3.1-8B-Instruct.jinja", m, opt),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
            "Cutting Knowledge Date: December 2023\nToday Date: 01 Feb 2025\n\n<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nWeather?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n"
            "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|eot_id|>"
            "<|start_header_id|>ipython<|end_header_id|>\n\n\"18C\"<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplates, Llama31RejectsParallelToolCalls) {
  ojson call = {{"function", {{"name", "f"}, {"arguments", ojson::object()}}}};
  ojson m = ojson::array({{{"role", "user"}, {"content", "x"}},
                          {{"role", "assistant"}, {"tool_calls", ojson::array({call, call})}}});
  expect_raises("meta-llama-Llama-3.1-8B-Instruct.jinja", m, "This model only supports single tool-calls at once!");
}

TEST(ChatTemplates, Llama32UsesStrftimeNow) {
  ChatRenderOptions opt = llama_opts();
  opt.now_unix = 1736035200;  // 2025-01-05 00:00:00 UTC
  std::string expected = kLlama31Conversation;
  expected.replace(expected.find("26 Jul 2024"), 11, "05 Jan 2025");
  EXPECT_EQ(render_template("meta-llama-Llama-3.2-3B-Instruct.jinja", conversation(), opt), expected);
  opt.extra["date_string"] = "26 Jul 2024";  // an explicit date wins
  EXPECT_EQ(render_template("meta-llama-Llama-3.2-3B-Instruct.jinja", conversation(), opt), kLlama31Conversation);
}

const char* kLlama3Conversation =
    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant.<|eot_id|>"
    "<|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\nHi there! How can I help?<|eot_id|>"
    "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>";

TEST(ChatTemplates, Llama3Conversation) {
  std::string gen = "<|start_header_id|>assistant<|end_header_id|>\n\n";
  for (const char* f : {"meta-llama-Meta-Llama-3-8B-Instruct.jinja", "meta-llama-Meta-Llama-3-8B-Instruct.initial-release.jinja"})
    EXPECT_EQ(render_template(f, conversation(), llama_opts()), kLlama3Conversation + gen) << f;
  ChatRenderOptions no_gen = llama_opts();
  no_gen.add_generation_prompt = false;
  EXPECT_EQ(render_template("meta-llama-Meta-Llama-3-8B-Instruct.jinja", conversation(), no_gen), kLlama3Conversation);
  // The initial release ignores add_generation_prompt and always opens the assistant turn.
  EXPECT_EQ(render_template("meta-llama-Meta-Llama-3-8B-Instruct.initial-release.jinja", conversation(), no_gen),
            kLlama3Conversation + gen);
}

// ---------------------------------------------------------------- Phi 3.5

TEST(ChatTemplates, Phi35Conversation) {
  ChatRenderOptions opt;
  opt.eos_token = "<|endoftext|>";
  const std::string body =
      "<|system|>\nYou are a helpful assistant.<|end|>\n<|user|>\nHello!<|end|>\n"
      "<|assistant|>\nHi there! How can I help?<|end|>\n<|user|>\nWhat is 2+2?\n<|end|>\n";
  EXPECT_EQ(render_template("microsoft-Phi-3.5-mini-instruct.jinja", conversation(), opt), body + "<|assistant|>\n");
  opt.add_generation_prompt = false;
  EXPECT_EQ(render_template("microsoft-Phi-3.5-mini-instruct.jinja", conversation(), opt), body + "<|endoftext|>");
}

// ---------------------------------------------------------------- Mistral Nemo

ChatRenderOptions mistral_opts() {
  ChatRenderOptions opt;
  opt.bos_token = "<s>";
  opt.eos_token = "</s>";
  return opt;
}

TEST(ChatTemplates, MistralNemoConversation) {
  // The system prompt is folded into the last user turn; there is no generation prompt.
  EXPECT_EQ(render_template("mistralai-Mistral-Nemo-Instruct-2407.jinja", conversation(), mistral_opts()),
            "<s>[INST]Hello![/INST]Hi there! How can I help?</s>"
            "[INST]You are a helpful assistant.\n\nWhat is 2+2?\n[/INST]");
}

TEST(ChatTemplates, MistralNemoRejectsNonAlternatingRoles) {
  ojson m = ojson::array({{{"role", "system"}, {"content", kSys}},
                          {{"role", "user"}, {"content", "a"}},
                          {{"role", "user"}, {"content", "b"}}});
  expect_raises("mistralai-Mistral-Nemo-Instruct-2407.jinja", m,
                "After the optional system message, conversation roles must alternate "
                "user/assistant/user/assistant/...");
}

TEST(ChatTemplates, MistralNemoToolsSkipReturnKey) {
  ojson tool = weather_tool();
  tool["function"]["return"] = {{"type", "string"}};  // filtered out by `if key != "return"`
  ChatRenderOptions opt = mistral_opts();
  opt.extra["tools"] = ojson::array({tool});
  ojson m = ojson::array({{{"role", "user"}, {"content", "Weather in Paris?"}}});
  EXPECT_EQ(render_template("mistralai-Mistral-Nemo-Instruct-2407.jinja", m, opt),
            "<s>[AVAILABLE_TOOLS][{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", "
            "\"description\": \"Get weather\", \"parameters\": {\"type\": \"object\", \"properties\": "
            "{\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}][/AVAILABLE_TOOLS]"
            "[INST]Weather in Paris?[/INST]");
}

// ---------------------------------------------------------------- API details

// gpt-oss (harmony): a system message with the date, reasoning effort and channels; the
// conversation's system message becomes the developer's instructions; earlier assistant turns
// keep only their final channel; the generation prompt opens an assistant message.
TEST(ChatTemplates, GptOssHarmonyConversation) {
  ChatRenderOptions opt;
  opt.now_unix = 1735689600;  // 2025-01-01
  const std::string sys =
      "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
      "Knowledge cutoff: 2024-06\nCurrent date: 2025-01-01\n\nReasoning: medium\n\n"
      "# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>";
  EXPECT_EQ(render_template("openai-gpt-oss-120b.jinja", conversation(), opt),
            sys + "<|start|>developer<|message|># Instructions\n\nYou are a helpful assistant.\n\n<|end|>"
                  "<|start|>user<|message|>Hello!<|end|>"
                  "<|start|>assistant<|channel|>final<|message|>Hi there! How can I help?<|end|>"
                  "<|start|>user<|message|>What is 2+2?\n<|end|><|start|>assistant");
  // No system message: no developer message; reasoning_effort from the request.
  opt.extra["reasoning_effort"] = "high";
  const std::string high = render_template("openai-gpt-oss-120b.jinja", conversation(false), opt);
  EXPECT_EQ(high.substr(0, high.find("<|end|>")), sys.substr(0, sys.find("medium")) + "high\n\n"
            "# Valid channels: analysis, commentary, final. Channel must be included for every message.");
  EXPECT_EQ(high.find("developer"), std::string::npos);
  // A last assistant turn without a generation prompt keeps its thinking as the analysis
  // channel and ends with <|return|> (what the model learnt to emit).
  ojson m = ojson::array({{{"role", "user"}, {"content", "Hi"}},
                          {{"role", "assistant"}, {"content", "Hello."}, {"thinking", "Greet back."}}});
  opt.add_generation_prompt = false;
  const std::string last = render_template("openai-gpt-oss-120b.jinja", m, opt);
  EXPECT_EQ(last.substr(last.find("<|start|>user")),
            "<|start|>user<|message|>Hi<|end|><|start|>assistant<|channel|>analysis<|message|>Greet back.<|end|>"
            "<|start|>assistant<|channel|>final<|message|>Hello.<|return|>");
}

TEST(ChatTemplates, ChatMLFallback) {
  EXPECT_EQ(ChatTemplate::chatml().render(conversation(), {}), kChatMLConversation);
}

TEST(ChatTemplates, PlainJsonMessagesWork) {
  nlohmann::json m = nlohmann::json::parse(R"([{"role": "user", "content": "Hi"}])");
  EXPECT_EQ(ChatTemplate::chatml().render(m, {}), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplates, MessagesMustBeAnArray) {
  EXPECT_THROW(ChatTemplate::chatml().render(nlohmann::json::object(), {}), Error);
}

TEST(ChatTemplates, TemplateFromTokenizerConfig) {
  nlohmann::json cfg = nlohmann::json::parse(read_template("Qwen-Qwen3-0.6B.tokenizer_config.json"));
  EXPECT_EQ(chat_template_from_config(cfg), read_template("Qwen-Qwen3-0.6B.jinja"));
  nlohmann::json listed = {{"chat_template", {{{"name", "tool_use"}, {"template", "x"}}, {{"name", "default"}, {"template", "y"}}}}};
  EXPECT_EQ(chat_template_from_config(listed), "y");
  EXPECT_THROW(chat_template_from_config(nlohmann::json::object()), Error);
}

}  // namespace
}  // namespace triattn
