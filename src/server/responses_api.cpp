#include "server/responses_api.h"

#include <algorithm>

#include "core/error.h"
#include "server/api_error.h"
#include "server/api_fields.h"
#include "server/api_tools.h"

namespace triattn::server {

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

const char* const kResponsesApi = "the Responses API";

// Chat fields the request is translated into, and the Responses fields they came from.
const std::map<std::string, std::string> kResponsesRenames = {{"max_tokens", "max_output_tokens"},
                                                     {"messages", "input"},
                                                     {"response_format", "text.format"},
                                                     {"response_format.json_schema", "text.format"},
                                                     {"response_format.json_schema.schema", "text.format.schema"}};

// Fields of the API accepted only with the value that asks for nothing this server lacks.
void check_default_only(const json& body) {
  auto at = [&](const char* name) -> const json* {
    auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
  };
  if (const json* v = at("truncation"); v && *v != "disabled")
    refuse_field("truncation", "can only be \"disabled\" (a prompt past the context is refused, not truncated)");
  if (const json* v = at("reasoning")) {
    if (!v->is_object()) refuse_field("reasoning", "must be an object");
    for (auto it = v->begin(); it != v->end(); ++it)
      if (!it->is_null())
        refuse_field("reasoning." + it.key(), "is not supported by this server (whether the model reasons is its "
                                              "chat template's; leave it out)");
  }
  if (const json* v = at("include"); v && !(v->is_array() && v->empty()))
    refuse_field("include", "is not supported by this server (leave it out)");
  if (const json* v = at("background"); v && *v != false)
    refuse_field("background", "is not supported by this server (send the request and wait, or stream it)");
  if (const json* v = at("service_tier"); v && *v != "auto" && *v != "default")
    refuse_field("service_tier", "can only be \"auto\" or \"default\"");
  if (const json* v = at("metadata")) {
    if (!v->is_object() || v->size() > 16) refuse_field("metadata", "must be an object of at most 16 string values");
    for (auto it = v->begin(); it != v->end(); ++it)
      if (!it->is_string()) refuse_field("metadata." + it.key(), "must be a string");
  }
  for (const char* name : {"user", "instructions", "previous_response_id"})
    if (const json* v = at(name); v && !v->is_string()) refuse_field(name, "must be a string");
  if (const json* v = at("store"); v && !v->is_boolean()) refuse_field("store", "must be true or false");
}

// text: {format: {type: text | json_object | json_schema, ...}} as a chat response_format; the
// schema in the order the client wrote it goes to `raw` (grammar_of_request reads it there).
void translate_text_format(const json& body, const std::string& raw_body, json& chat, std::string& raw) {
  auto it = body.find("text");
  if (it == body.end() || it->is_null()) return;
  const json& text = *it;
  if (!text.is_object()) refuse_field("text", "must be an object {format}");
  for (auto k = text.begin(); k != text.end(); ++k)
    if (k.key() != "format" && !(k.key() == "verbosity" && k->is_null()))
      refuse_field("text." + k.key(), "is not supported by this server (text.format is)");
  if (!text.contains("format") || text["format"].is_null()) return;
  const json& f = text["format"];
  if (!f.is_object() || !f.contains("type") || !f["type"].is_string())
    refuse_field("text.format", "must be an object with a 'type': \"text\", \"json_object\" or \"json_schema\"");
  const std::string type = f["type"].get<std::string>();
  if (type != "json_schema") {
    for (auto k = f.begin(); k != f.end(); ++k)
      if (k.key() != "type") refuse_field("text.format." + k.key(), "is not a field of the '" + type + "' format");
    chat["response_format"] = {{"type", type}};
    return;
  }
  json js = json::object();
  for (auto k = f.begin(); k != f.end(); ++k) {
    if (k.key() == "type") continue;
    if (k.key() != "name" && k.key() != "schema" && k.key() != "strict" && k.key() != "description")
      refuse_field("text.format." + k.key(), "is not supported (name, description, schema and strict are)");
    js[k.key()] = *k;
  }
  chat["response_format"] = {{"type", "json_schema"}, {"json_schema", js}};
  try {
    const ojson whole = ojson::parse(raw_body);
    ojson r;
    r["response_format"]["json_schema"]["schema"] = whole.at("text").at("format").at("schema");
    raw = r.dump();
  } catch (const ojson::exception&) {
  }
}

// One turn of the conversation as the chat template takes it (tool_history_message).
struct InputTurn {
  std::string role, content, tool_call_id, at;
  std::vector<HistoryCall> calls;
};

std::string input_string(const json& item, const std::string& key, const std::string& at) {
  if (!item.contains(key) || !item[key].is_string()) refuse_field(at + "." + key, "must be a string");
  return item[key].get<std::string>();
}

void check_item_keys(const json& item, const std::string& at, const std::vector<std::string>& keys, const std::string& type) {
  for (auto k = item.begin(); k != item.end(); ++k) {
    bool known = k.key() == "type" || k.key() == "id" || k.key() == "status";
    for (const std::string& name : keys) known = known || name == k.key();
    if (!known) refuse_field(at + "." + k.key(), "is not a field of a " + type + " item");
  }
}

// One item of `input` (or a plain {role, content} object) added to the turns: a message, a
// function call (joined to the assistant turn it follows) or a function call's output.
void add_input_item(const json& item, const std::string& at, std::vector<InputTurn>& turns) {
  if (!item.is_object()) refuse_field(at, "must be an object (a message item)");
  const std::string type = item.contains("type") && item["type"].is_string() ? item["type"].get<std::string>() : "message";
  if (type == "function_call") {
    check_item_keys(item, at, {"call_id", "name", "arguments"}, type);
    HistoryCall call{input_string(item, "call_id", at), input_string(item, "name", at), input_string(item, "arguments", at)};
    if (!json::parse(call.arguments, nullptr, false).is_object())
      refuse_field(at + ".arguments", "must be a JSON object, as a string");
    if (turns.empty() || turns.back().role != "assistant") turns.push_back({"assistant", "", "", at, {}});
    turns.back().calls.push_back(std::move(call));
    return;
  }
  if (type == "function_call_output") {
    check_item_keys(item, at, {"call_id", "output"}, type);
    const std::string id = input_string(item, "call_id", at);
    if (!item.contains("output")) refuse_field(at + ".output", "is required");
    turns.push_back({"tool", content_text(item["output"], at + ".output", {"input_text", "output_text"}), id, at, {}});
    return;
  }
  if (type == "reasoning")
    refuse_field(at + ".type", "'reasoning' items are not taken as input: continue a stored response with "
                               "previous_response_id to keep its reasoning");
  if (type != "message")
    refuse_field(at + ".type", "'" + type + "' items are not supported (message, function_call and "
                               "function_call_output items are)");
  check_item_keys(item, at, {"role", "content"}, "message");
  if (!item.contains("role") || !item["role"].is_string()) refuse_field(at + ".role", "must be a string");
  std::string role = item["role"].get<std::string>();
  if (role != "user" && role != "system" && role != "developer" && role != "assistant")
    refuse_field(at + ".role", "must be user, system, developer or assistant, not '" + role + "'");
  if (role == "developer") role = "system";  // what chat templates call it
  if (!item.contains("content")) refuse_field(at + ".content", "is required");
  turns.push_back({role, content_text(item["content"], at + ".content", {"input_text", "output_text"}), "", at, {}});
}

ojson input_messages(const json& body, ToolSyntax syntax) {
  std::vector<InputTurn> turns;
  if (auto it = body.find("instructions"); it != body.end() && it->is_string())
    turns.push_back({"system", it->get<std::string>(), "", "instructions", {}});
  auto in = body.find("input");
  if (in == body.end() || in->is_null()) refuse_field("input", "is required");
  if (in->is_string()) {
    turns.push_back({"user", in->get<std::string>(), "", "input", {}});
  } else if (in->is_array() && !in->empty()) {
    for (size_t i = 0; i < in->size(); ++i) add_input_item((*in)[i], "input[" + std::to_string(i) + "]", turns);
  } else {
    refuse_field("input", "must be a string or a non-empty list of items");
  }
  ojson messages = ojson::array();
  for (const InputTurn& t : turns)
    messages.push_back(tool_history_message(t.role, t.content, t.calls, t.tool_call_id, t.at, syntax));
  return messages;
}

}  // namespace

std::string continuation_after_reply(const ChatPrompt& chat_prompt, const ojson& messages, const ojson& kwargs) {
  // The conversation before is stood in for by marker turns: what follows the marker reply
  // is what the template writes after any finished reply.
  static const std::string kTurn = "TRIATTN_EARLIER_TURN", kReply = "TRIATTN_EARLIER_REPLY";
  ojson all = ojson::array({chat_message("user", kTurn), chat_message("assistant", kReply)});
  for (const auto& m : messages) all.push_back(m);
  std::string text;
  try {
    text = chat_prompt.render(all, /*add_generation_prompt=*/true, kwargs);
  } catch (const Error& e) {
    throw ApiError(400, e.what(), "input");
  }
  const size_t at = text.rfind(kReply);
  if (at == std::string::npos)
    throw ApiError(400, "the chat template does not write an earlier reply as it was, so a stored response cannot be "
                        "continued: send the whole conversation as input instead",
                   "previous_response_id");
  return text.substr(at + kReply.size());
}

ResponsesRequest parse_responses_request(const json& body, const std::string& raw_body, const Model& model,
                                         const ChatPrompt& chat_prompt, const RequestDefaults& defaults,
                                         const ResponseStore& store) {
  check_fields(body,
               {"model", "input", "instructions", "max_output_tokens", "temperature", "top_p", "seed", "stream",
                "store", "previous_response_id", "text", "metadata", "user", "tools", "tool_choice",
                "parallel_tool_calls", "truncation", "reasoning", "include", "background", "service_tier"},
               {}, kResponsesApi);
  check_default_only(body);
  if (auto m = body.find("model"); m != body.end() && !m->is_null() && !m->is_string())
    refuse_field("model", "must be a string");

  json chat = json::object();
  for (auto it = body.begin(); it != body.end(); ++it)
    if (is_kv_field(it.key())) chat[it.key()] = *it;
  for (const char* name : {"temperature", "top_p", "seed", "stream"})
    if (body.contains(name)) chat[name] = body[name];
  if (body.contains("max_output_tokens")) chat["max_tokens"] = body["max_output_tokens"];
  std::string raw;
  translate_text_format(body, raw_body, chat, raw);

  ResponsesRequest r;
  r.gen = parse_translated(chat, kResponsesRenames, model, defaults, raw.empty() ? nullptr : &raw);
  r.store = body.value("store", true);
  if (auto p = body.find("previous_response_id"); p != body.end() && p->is_string())
    r.previous_response_id = p->get<std::string>();

  r.gen.tools = responses_tools(body, &raw_body, chat_prompt.template_source());
  const ojson messages = input_messages(body, tool_syntax_of_template(chat_prompt.template_source()));
  const ojson kwargs = tool_template_kwargs(r.gen.tools.get());
  if (!r.previous_response_id.empty()) {
    const auto prev = store.find(r.previous_response_id);
    if (!prev)
      throw ApiError(400, "no stored response '" + r.previous_response_id + "' (never stored, sent with store: false, "
                          "deleted, or forgotten as the oldest)",
                     "previous_response_id");
    r.gen.prompt_text = continuation_after_reply(chat_prompt, messages, kwargs);
    r.gen.prompt = prev->tokens;
    const std::vector<int32_t> next = chat_prompt.tokenize_continuation(r.gen.prompt_text);
    r.gen.prompt.insert(r.gen.prompt.end(), next.begin(), next.end());
  } else {
    try {
      r.gen.prompt_text = chat_prompt.render(messages, /*add_generation_prompt=*/true, kwargs);
      r.gen.prompt = chat_prompt.tokenize(r.gen.prompt_text);
    } catch (const Error& e) {
      throw ApiError(400, e.what(), "input");
    }
  }
  if (r.gen.prompt.empty()) refuse_field("input", "gives no tokens");
  if (r.gen.tools && r.gen.tools->forces_calls() && r.gen.options.grammar)
    refuse_field("tool_choice", "forces a call, which cannot be combined with 'text.format' (send one of them)");
  force_tool_calls(r.gen, model, chat_prompt, defaults);  // its errors name tools or tool_choice

  auto given = [&](const char* name, json fallback) {
    auto it = body.find(name);
    return it == body.end() || it->is_null() ? fallback : *it;
  };
  r.echo = {{"instructions", given("instructions", nullptr)},
            {"max_output_tokens", given("max_output_tokens", nullptr)},
            {"temperature", r.gen.sampling.temperature},
            {"top_p", r.gen.sampling.top_p},
            {"seed", r.gen.sampling.seed},
            {"previous_response_id", r.previous_response_id.empty() ? json(nullptr) : json(r.previous_response_id)},
            {"store", r.store},
            {"text", {{"format", given("text", json::object()).value("format", json{{"type", "text"}})}}},
            {"metadata", given("metadata", json::object())},
            {"user", given("user", nullptr)},
            {"tools", given("tools", json::array())},
            {"tool_choice", given("tool_choice", "auto")},
            {"parallel_tool_calls", given("parallel_tool_calls", true)},
            {"truncation", "disabled"},
            {"reasoning", {{"effort", nullptr}, {"summary", nullptr}}},
            {"background", false}};
  return r;
}

// ---------------------------------------------------------------- the response and its events

json ResponsesFormat::object(const std::string& status, const json& output) const {
  json o = {{"id", s_.id},         {"object", "response"}, {"created_at", s_.created_at},
            {"status", status},    {"error", nullptr},      {"incomplete_details", nullptr},
            {"model", s_.model},   {"output", output},      {"usage", nullptr}};
  o.update(s_.echo);
  return o;
}

json ResponsesFormat::item_json(const Item& it, const std::string& status) const {
  const bool done = status != "in_progress";
  if (!it.call.is_null())
    return {{"type", "function_call"},
            {"id", it.id},
            {"call_id", it.call["id"]},
            {"name", it.call["function"]["name"]},
            {"arguments", done ? it.call["function"]["arguments"] : json("")},
            {"status", status}};
  if (it.reasoning) {
    json content = json::array();
    if (done) content.push_back({{"type", "reasoning_text"}, {"text", it.text}});
    return {{"type", "reasoning"}, {"id", it.id}, {"summary", json::array()}, {"content", content}, {"status", status}};
  }
  json content = json::array();
  if (done)
    content.push_back({{"type", "output_text"}, {"text", it.text}, {"annotations", json::array()}, {"logprobs", json::array()}});
  return {{"type", "message"}, {"id", it.id}, {"status", status}, {"role", "assistant"}, {"content", content}};
}

json ResponsesFormat::finished(const GenerateResult& r, const std::vector<Item>& items, const ReasoningSplit::Out& text) {
  const bool incomplete = r.finish_reason == "length";
  json output = json::array();
  for (const Item& it : items) output.push_back(item_json(it, "completed"));
  json o = object(incomplete ? "incomplete" : "completed", output);
  if (incomplete) o["incomplete_details"] = {{"reason", "max_output_tokens"}};
  // Reasoning tokens: those whose text begins before the answer does.
  int64_t reasoning_tokens = 0;
  if (!text.reasoning.empty()) {
    const size_t answer_at = r.text.size() - std::min(r.text.size(), text.content.size());
    for (size_t off : r.text_offsets) reasoning_tokens += off < answer_at ? 1 : 0;
  }
  const int64_t input = static_cast<int64_t>(s_.prompt.size()), output_tokens = r.stats.generated_tokens;
  o["usage"] = {{"input_tokens", input},
                {"input_tokens_details", {{"cached_tokens", r.reused_tokens}}},
                {"output_tokens", output_tokens},
                {"output_tokens_details", {{"reasoning_tokens", reasoning_tokens}}},
                {"total_tokens", input + output_tokens}};
  if (s_.store && s_.store_into && (r.finish_reason == "stop" || r.finish_reason == "length")) {
    auto kept = std::make_shared<StoredResponse>();
    kept->response = o;
    kept->tokens = s_.prompt;
    kept->tokens.insert(kept->tokens.end(), r.tokens.begin(), r.tokens.end());
    // The end-of-generation token is not part of the history: the template's own end of
    // the turn follows the reply when the conversation continues.
    if (!r.tokens.empty() && s_.tok->is_eog(r.tokens.back())) {
      kept->tokens.pop_back();
      kept->ended_by_eog = true;
    }
    s_.store_into->put(s_.id, std::move(kept));
  }
  return o;
}

std::string ResponsesFormat::item_id(const std::string& prefix, size_t index) const {
  // The response's own suffix ("resp_" dropped) and the item's place in the output.
  return prefix + s_.id.substr(5) + "_" + std::to_string(index);
}

ResponsesFormat::Item ResponsesFormat::call_item(const json& call, size_t index) const {
  return {false, item_id("fc_", index), "", call};
}

json ResponsesFormat::whole(const GenerateResult& r, const ReasoningSplit::Out& text, const json& calls) {
  std::vector<Item> items;
  if (!text.reasoning.empty()) items.push_back({true, item_id("rs_", 0), text.reasoning});
  // A reply that only calls has no message.
  if (!text.content.empty() || calls.empty()) items.push_back({false, item_id("msg_", items.size()), text.content});
  for (const json& call : calls) items.push_back(call_item(call, items.size()));
  return finished(r, items, text);
}

std::string ResponsesFormat::event(const std::string& type, json data) {
  data["type"] = type;
  data["sequence_number"] = sequence_++;
  return named_sse_event(type, data);
}

std::string ResponsesFormat::open_item(bool reasoning) {
  std::string out = open_ ? close_item() : "";
  items_.push_back({reasoning, item_id(reasoning ? "rs_" : "msg_", items_.size()), ""});
  open_ = true;
  const Item& it = items_.back();
  const int64_t index = static_cast<int64_t>(items_.size()) - 1;
  out += event("response.output_item.added", {{"output_index", index}, {"item", item_json(it, "in_progress")}});
  const json part = reasoning ? json{{"type", "reasoning_text"}, {"text", ""}}
                              : json{{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}, {"logprobs", json::array()}};
  out += event("response.content_part.added",
               {{"item_id", it.id}, {"output_index", index}, {"content_index", 0}, {"part", part}});
  return out;
}

std::string ResponsesFormat::close_item() {
  open_ = false;
  const Item& it = items_.back();
  const int64_t index = static_cast<int64_t>(items_.size()) - 1;
  const json where = {{"item_id", it.id}, {"output_index", index}, {"content_index", 0}};
  std::string out;
  json done = where, part;
  done["text"] = it.text;
  if (it.reasoning) {
    out += event("response.reasoning_text.done", done);
    part = {{"type", "reasoning_text"}, {"text", it.text}};
  } else {
    done["logprobs"] = json::array();
    out += event("response.output_text.done", done);
    part = {{"type", "output_text"}, {"text", it.text}, {"annotations", json::array()}, {"logprobs", json::array()}};
  }
  json pd = where;
  pd["part"] = part;
  out += event("response.content_part.done", pd);
  out += event("response.output_item.done", {{"output_index", index}, {"item", item_json(it, "completed")}});
  return out;
}

// A call comes whole from the reader: its item opens, its arguments come as one delta, and it closes.
std::string ResponsesFormat::stream_call(const json& call) {
  std::string out = open_ ? close_item() : "";
  items_.push_back(call_item(call, items_.size()));
  const Item& it = items_.back();
  const int64_t index = static_cast<int64_t>(items_.size()) - 1;
  const json args = call["function"]["arguments"];
  out += event("response.output_item.added", {{"output_index", index}, {"item", item_json(it, "in_progress")}});
  out += event("response.function_call_arguments.delta", {{"item_id", it.id}, {"output_index", index}, {"delta", args}});
  out += event("response.function_call_arguments.done",
               {{"item_id", it.id}, {"output_index", index}, {"name", call["function"]["name"]}, {"arguments", args}});
  return out + event("response.output_item.done", {{"output_index", index}, {"item", item_json(it, "completed")}});
}

std::string ResponsesFormat::stream_begin() {
  const json o = object("in_progress", json::array());
  std::string out = event("response.created", {{"response", o}});  // numbered in this order
  return out + event("response.in_progress", {{"response", o}});
}

std::string ResponsesFormat::stream_piece(const ReasoningSplit::Out& piece, const json& calls) {
  std::string out;
  auto add = [&](bool reasoning, const std::string& delta) {
    if (delta.empty()) return;
    if (!open_ || items_.back().reasoning != reasoning) out += open_item(reasoning);
    items_.back().text += delta;
    json d = {{"item_id", items_.back().id},
              {"output_index", static_cast<int64_t>(items_.size()) - 1},
              {"content_index", 0},
              {"delta", delta}};
    if (!reasoning) d["logprobs"] = json::array();
    out += event(reasoning ? "response.reasoning_text.delta" : "response.output_text.delta", d);
  };
  add(true, piece.reasoning);
  add(false, piece.content);
  for (const json& call : calls) out += stream_call(call);
  return out;
}

std::string ResponsesFormat::stream_end(const GenerateResult& r, const ReasoningSplit::Out& text) {
  std::string out;
  // An empty answer is still a message, unless the reply called.
  const bool has_message = std::any_of(items_.begin(), items_.end(), [](const Item& i) { return !i.reasoning; });
  if (!has_message) out += open_item(false);
  if (open_) out += close_item();
  const json o = finished(r, items_, text);
  return out + event(o["status"] == "incomplete" ? "response.incomplete" : "response.completed", {{"response", o}});
}

std::string ResponsesFormat::stream_error(const ApiError& e) {
  const json b = e.body()["error"];
  return event("error", {{"code", b["type"]}, {"message", b["message"]}, {"param", b["param"]}});
}

}  // namespace triattn::server
