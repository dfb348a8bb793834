#include "server/messages_api.h"

#include "core/error.h"
#include "server/api_error.h"
#include "server/api_fields.h"
#include "server/api_tools.h"
#include "server/reasoning_split.h"

namespace triattn::server {

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

const char* const kMessagesApi = "the Messages API";
const std::map<std::string, std::string> kMessagesRenames = {{"stop", "stop_sequences"}};

// The request's `thinking`: {"type": "enabled", "budget_tokens": N} holds the reply's thinking
// to N tokens; {"type": "disabled"} renders the template with enable_thinking false and closes
// any thinking block the model opens at once. Absent: the template's default, no limit.
struct Thinking {
  bool given = false;
  bool enabled = true;
  int64_t budget = 0;
};

Thinking thinking_of(const json& body, const ChatPrompt& chat_prompt) {
  Thinking t;
  auto it = body.find("thinking");
  if (it == body.end() || it->is_null()) return t;
  t.given = true;
  const json& f = *it;
  if (!f.is_object() || !f.contains("type") || (f["type"] != "enabled" && f["type"] != "disabled"))
    refuse_field("thinking.type", "must be \"enabled\" or \"disabled\"");
  for (auto k = f.begin(); k != f.end(); ++k)
    if (k.key() != "type" && k.key() != "budget_tokens")
      refuse_field("thinking." + k.key(), "is not a field of thinking (type and budget_tokens are)");
  t.enabled = f["type"] == "enabled";
  if (t.enabled) {
    if (!f.contains("budget_tokens") || !f["budget_tokens"].is_number_integer() || f["budget_tokens"].get<int64_t>() < 1)
      refuse_field("thinking.budget_tokens", "must be an integer of at least 1 with type \"enabled\"");
    t.budget = f["budget_tokens"].get<int64_t>();
  } else if (f.contains("budget_tokens")) {
    refuse_field("thinking.budget_tokens", "goes with type \"enabled\" only");
  }
  if (chat_prompt.template_source().find("<|channel|>") != std::string::npos)
    refuse_field("thinking", "cannot be set for this model: it thinks in harmony's analysis channel, which this "
                             "server does not hold to a budget");
  return t;
}

std::string block_string(const json& part, const std::string& key, const std::string& pat) {
  if (!part.contains(key) || !part[key].is_string()) refuse_field(pat + "." + key, "must be a string");
  return part[key].get<std::string>();
}

// A tool_result block as a tool message: its content (a string or text blocks) is what the
// model reads; is_error: true is said in that text (templates have no field for it).
ojson tool_result_message(const json& part, const std::string& pat, ToolSyntax syntax) {
  for (auto k = part.begin(); k != part.end(); ++k)
    if (k.key() != "type" && k.key() != "tool_use_id" && k.key() != "content" && k.key() != "is_error")
      refuse_field(pat + "." + k.key(), "is not a field of a tool_result block that this server supports");
  const std::string id = block_string(part, "tool_use_id", pat);
  std::string text = part.contains("content") && !part["content"].is_null()
                         ? content_text(part["content"], pat + ".content", {"text"})
                         : std::string();
  if (auto e = part.find("is_error"); e != part.end() && !e->is_null()) {
    if (!e->is_boolean()) refuse_field(pat + ".is_error", "must be true or false");
    if (e->get<bool>()) text = "Error: " + text;
  }
  return tool_history_message("tool", text, {}, id, pat, syntax);
}

// A message's content blocks as chat messages: text (an assistant's thinking blocks become its
// reasoning_content, what chat templates of reasoning models read), an assistant's tool_use
// blocks its tool calls, a user's tool_result blocks tool messages before the user's text.
void add_message(const json& m, const std::string& at, ToolSyntax syntax, ojson& messages) {
  if (!m.is_object()) refuse_field(at, "must be an object with 'role' and 'content'");
  for (auto k = m.begin(); k != m.end(); ++k)
    if (k.key() != "role" && k.key() != "content") refuse_field(at + "." + k.key(), "is not a field of a message");
  if (!m.contains("role") || !m["role"].is_string()) refuse_field(at + ".role", "must be a string");
  const std::string role = m["role"].get<std::string>();
  if (role != "user" && role != "assistant") refuse_field(at + ".role", "must be user or assistant, not '" + role + "'");
  if (!m.contains("content")) refuse_field(at + ".content", "is required");
  std::string thinking;
  std::vector<HistoryCall> calls;
  ojson results = ojson::array();
  const std::string text = content_text(m["content"], at + ".content", {"text"}, [&](const json& part, const std::string& pat) {
    const std::string type = part["type"].get<std::string>();
    if (type == "thinking" && role == "assistant" && part.contains("thinking") && part["thinking"].is_string()) {
      thinking += part["thinking"].get<std::string>();
      return true;
    }
    if (type == "tool_use" && role == "assistant") {
      for (auto k = part.begin(); k != part.end(); ++k)
        if (k.key() != "type" && k.key() != "id" && k.key() != "name" && k.key() != "input")
          refuse_field(pat + "." + k.key(), "is not a field of a tool_use block");
      if (!part.contains("input") || !part["input"].is_object()) refuse_field(pat + ".input", "must be an object");
      calls.push_back({block_string(part, "id", pat), block_string(part, "name", pat), part["input"].dump()});
      return true;
    }
    if (type == "tool_result" && role == "user") {
      results.push_back(tool_result_message(part, pat, syntax));
      return true;
    }
    if (type == "tool_use" || type == "tool_result")
      refuse_field(pat + ".type", "'" + type + "' blocks belong to " + (type == "tool_use" ? "assistant" : "user") +
                                      " messages");
    if (type == "image" || type == "document")
      refuse_field(pat + ".type", "'" + type + "' blocks are not supported: this server's models read text only");
    return false;
  });
  for (auto& r : results) messages.push_back(std::move(r));
  if (!results.empty() && text.empty()) return;  // the results were the whole message
  ojson msg = tool_history_message(role, text, calls, "", at, syntax);
  if (!thinking.empty()) msg["reasoning_content"] = thinking;
  messages.push_back(std::move(msg));
}

}  // namespace

json anthropic_error(const ApiError& e) {
  const char* type = e.status == 401   ? "authentication_error"
                     : e.status == 403 ? "permission_error"
                     : e.status == 404 ? "not_found_error"
                     : e.status == 413 ? "request_too_large"
                     : e.status == 429 ? "rate_limit_error"
                     : e.status == 503 ? "overloaded_error"
                     : e.status >= 500 ? "api_error"
                                       : "invalid_request_error";
  return {{"type", "error"}, {"error", {{"type", type}, {"message", e.what()}}}};
}

MessagesRequest parse_messages_request(const json& body, const std::string* raw_body, const Model& model,
                                       const ChatPrompt& chat_prompt, const RequestDefaults& defaults, bool count_only) {
  if (count_only)
    check_fields(body, {"model", "messages", "system", "tools", "tool_choice", "thinking"}, {},
                 "count_tokens");
  else
    check_fields(body,
                 {"model", "messages", "system", "max_tokens", "stop_sequences", "temperature", "top_p", "top_k",
                  "stream", "metadata", "service_tier", "tools", "tool_choice", "thinking"},
                 {}, kMessagesApi);
  if (auto m = body.find("model"); m != body.end() && !m->is_string()) refuse_field("model", "must be a string");
  if (auto v = body.find("metadata"); v != body.end() && !v->is_null()) {
    if (!v->is_object()) refuse_field("metadata", "must be an object");
    for (auto k = v->begin(); k != v->end(); ++k)
      if (k.key() != "user_id") refuse_field("metadata." + k.key(), "is not a field of metadata (user_id is)");
  }
  if (auto v = body.find("service_tier"); v != body.end() && *v != "auto" && *v != "standard_only")
    refuse_field("service_tier", "can only be \"auto\" or \"standard_only\"");

  json chat = json::object();
  for (auto it = body.begin(); it != body.end(); ++it)
    if (is_kv_field(it.key())) chat[it.key()] = *it;
  if (!count_only) {
    if (!body.contains("max_tokens") || body["max_tokens"].is_null()) refuse_field("max_tokens", "is required");
    chat["max_tokens"] = body["max_tokens"];
    for (const char* name : {"temperature", "top_p", "top_k", "stream"})
      if (body.contains(name)) chat[name] = body[name];
    if (auto s = body.find("stop_sequences"); s != body.end() && !s->is_null()) {
      if (!s->is_array()) refuse_field("stop_sequences", "must be a list of strings");
      chat["stop"] = *s;
    }
  }
  MessagesRequest r;
  r.gen = parse_translated(chat, kMessagesRenames, model, defaults);

  ojson messages = ojson::array();
  if (auto s = body.find("system"); s != body.end() && !s->is_null())
    messages.push_back(chat_message("system", content_text(*s, "system", {"text"})));
  r.gen.tools = messages_tools(body, raw_body, chat_prompt.template_source());
  const ToolSyntax syntax = tool_syntax_of_template(chat_prompt.template_source());
  auto m = body.find("messages");
  if (m == body.end() || !m->is_array() || m->empty()) refuse_field("messages", "must be a non-empty list of messages");
  for (size_t i = 0; i < m->size(); ++i) add_message((*m)[i], "messages[" + std::to_string(i) + "]", syntax, messages);
  // The assistant's last message is the start of its reply: rendered after the generation
  // prompt, and continued.
  std::string prefill;
  if (messages.back()["role"] == "assistant") {
    if (messages.back().contains("tool_calls"))
      refuse_field("messages[" + std::to_string(m->size() - 1) + "].content",
                   "ends the conversation with tool_use blocks: send their tool_result blocks in a user message to "
                   "continue it");
    prefill = messages.back()["content"].get<std::string>();
    messages.erase(messages.size() - 1);
  }
  const Thinking thinking = thinking_of(body, chat_prompt);
  if (thinking.enabled && thinking.given && !count_only && thinking.budget >= r.gen.options.n_predict)
    refuse_field("thinking.budget_tokens", "is " + std::to_string(thinking.budget) + ": it must be less than max_tokens (" +
                                               std::to_string(r.gen.options.n_predict) + ")");
  ojson kwargs = tool_template_kwargs(r.gen.tools.get());
  if (thinking.given) kwargs["enable_thinking"] = thinking.enabled;
  try {
    r.gen.prompt_text = chat_prompt.render(messages, /*add_generation_prompt=*/true, kwargs) + prefill;
    r.gen.prompt = chat_prompt.tokenize(r.gen.prompt_text);
  } catch (const Error& e) {
    throw ApiError(400, e.what(), "messages");
  }
  if (r.gen.prompt.empty()) refuse_field("messages", "gives no tokens");
  if (count_only) return r;
  force_tool_calls(r.gen, model, chat_prompt, defaults);
  if (thinking.given && r.gen.options.grammar) {
    // A forced call's grammar already says where thinking may go; a budget would force text
    // the grammar does not take.
    if (thinking.enabled)
      refuse_field("thinking", "cannot be enabled while tool_choice forces a tool call (as Anthropic's API refuses)");
    return r;
  }
  if (thinking.given) {
    auto spec = std::make_shared<ThinkingBudgetSpec>();
    spec->tokens = thinking.enabled ? thinking.budget : 0;
    spec->open_at_start = ReasoningSplit::prompt_opens_reasoning(r.gen.prompt_text);
    spec->close_ids = model.tokenizer().encode(spec->close + "\n\n", /*add_bos=*/false, /*parse_special=*/true);
    if (model.tokenizer().decode(spec->close_ids).find(spec->close) == std::string::npos)
      refuse_field("thinking", "cannot be held for this model: its vocabulary cannot spell " + spec->close);
    r.gen.options.thinking_budget = std::move(spec);
  }
  return r;
}

// ---------------------------------------------------------------- the message and its events

std::pair<std::string, json> MessagesFormat::stop_of(const GenerateResult& r, bool called) const {
  if (r.finish_reason != "stop") return {"max_tokens", nullptr};
  if (called) return {"tool_use", nullptr};
  if (r.tokens.empty() || s_.tok->is_eog(r.tokens.back()) || s_.stop.empty()) return {"end_turn", nullptr};
  // A stop sequence ended it: the one the reply's tokens spell first where its text ends (a
  // little before, as decoding the ids at once may space the first token differently).
  const std::string all = s_.tok->decode(r.tokens);
  const size_t from = r.text.size() >= 2 ? r.text.size() - 2 : 0;
  size_t best = std::string::npos;
  json which = nullptr;
  for (const std::string& s : s_.stop)
    if (const size_t at = all.find(s, from); at < best) {
      best = at;
      which = s;
    }
  if (which.is_null()) return {"end_turn", nullptr};  // a grammar that was complete
  return {"stop_sequence", which};
}

json MessagesFormat::usage(const GenerateResult* r) const {
  return {{"input_tokens", s_.input_tokens},
          {"output_tokens", r ? r->stats.generated_tokens : 0},
          {"cache_read_input_tokens", r ? r->reused_tokens : 0},
          {"cache_creation_input_tokens", 0}};
}

// A call read from the reply as a tool_use block (its arguments parsed: the parser gives JSON).
static json tool_use_block(const json& call, bool with_input) {
  json input = json::object();
  if (with_input) input = json::parse(call["function"]["arguments"].get<std::string>(), nullptr, false);
  if (!input.is_object()) input = json::object();
  return {{"type", "tool_use"}, {"id", call["id"]}, {"name", call["function"]["name"]}, {"input", input}};
}

json MessagesFormat::whole(const GenerateResult& r, const ReasoningSplit::Out& text, const json& calls) {
  json content = json::array();
  if (!text.reasoning.empty()) content.push_back({{"type", "thinking"}, {"thinking", text.reasoning}, {"signature", ""}});
  // A reply that only calls has no text block.
  if (!text.content.empty() || calls.empty()) content.push_back({{"type", "text"}, {"text", text.content}});
  for (const json& call : calls) content.push_back(tool_use_block(call, true));
  const auto [reason, sequence] = stop_of(r, !calls.empty());
  return {{"id", s_.id},           {"type", "message"},         {"role", "assistant"},
          {"model", s_.model},     {"content", content},        {"stop_reason", reason},
          {"stop_sequence", sequence}, {"usage", usage(&r)}};
}

std::string MessagesFormat::open_block(bool thinking) {
  std::string out = open_ ? close_block() : "";
  open_ = true;
  thinking_ = thinking;
  text_seen_ = text_seen_ || !thinking;
  const json block = thinking ? json{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}
                              : json{{"type", "text"}, {"text", ""}};
  out += named_sse_event("content_block_start",
                         {{"type", "content_block_start"}, {"index", blocks_++}, {"content_block", block}});
  return out;
}

std::string MessagesFormat::close_block() {
  open_ = false;
  std::string out;
  const int index = blocks_ - 1;
  if (thinking_)  // thinking blocks end with their signature (none here: nothing is signed)
    out += named_sse_event("content_block_delta", {{"type", "content_block_delta"},
                                                   {"index", index},
                                                   {"delta", {{"type", "signature_delta"}, {"signature", ""}}}});
  return out + named_sse_event("content_block_stop", {{"type", "content_block_stop"}, {"index", index}});
}

std::string MessagesFormat::stream_begin() {
  const json message = {{"id", s_.id},       {"type", "message"},     {"role", "assistant"},
                        {"model", s_.model}, {"content", json::array()}, {"stop_reason", nullptr},
                        {"stop_sequence", nullptr}, {"usage", usage(nullptr)}};
  return named_sse_event("message_start", {{"type", "message_start"}, {"message", message}});
}

// A call comes whole from the reader: its block opens with an empty input, which comes as one
// input_json_delta.
std::string MessagesFormat::stream_call(const json& call) {
  std::string out = open_ ? close_block() : "";
  called_ = true;
  const int index = blocks_++;
  out += named_sse_event("content_block_start",
                         {{"type", "content_block_start"}, {"index", index}, {"content_block", tool_use_block(call, false)}});
  out += named_sse_event("content_block_delta",
                         {{"type", "content_block_delta"},
                          {"index", index},
                          {"delta", {{"type", "input_json_delta"}, {"partial_json", call["function"]["arguments"]}}}});
  return out + named_sse_event("content_block_stop", {{"type", "content_block_stop"}, {"index", index}});
}

std::string MessagesFormat::stream_piece(const ReasoningSplit::Out& piece, const json& calls) {
  std::string out;
  auto add = [&](bool thinking, const std::string& delta) {
    if (delta.empty()) return;
    if (!open_ || thinking_ != thinking) out += open_block(thinking);
    const json d = thinking ? json{{"type", "thinking_delta"}, {"thinking", delta}} : json{{"type", "text_delta"}, {"text", delta}};
    out += named_sse_event("content_block_delta", {{"type", "content_block_delta"}, {"index", blocks_ - 1}, {"delta", d}});
  };
  add(true, piece.reasoning);
  add(false, piece.content);
  for (const json& call : calls) out += stream_call(call);
  return out;
}

std::string MessagesFormat::stream_end(const GenerateResult& r, const ReasoningSplit::Out& text) {
  (void)text;
  std::string out;
  if (!text_seen_ && !called_) out += open_block(false);  // the answer is a text block, if empty
  if (open_) out += close_block();
  const auto [reason, sequence] = stop_of(r, called_);
  out += named_sse_event("message_delta", {{"type", "message_delta"},
                                           {"delta", {{"stop_reason", reason}, {"stop_sequence", sequence}}},
                                           {"usage", {{"output_tokens", r.stats.generated_tokens}}}});
  return out + named_sse_event("message_stop", {{"type", "message_stop"}});
}

std::string MessagesFormat::stream_error(const ApiError& e) { return named_sse_event("error", anthropic_error(e)); }

}  // namespace triattn::server
