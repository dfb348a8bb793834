#include "server/tool_fields.h"

#include <set>

#include "chat/tool_call_grammar.h"
#include "core/error.h"
#include "server/api_error.h"
#include "server/grammar_fields.h"
#include "server/reasoning_split.h"

namespace triattn::server {

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

[[noreturn]] void refuse_tool_field(const std::string& field, const std::string& what) {
  throw ApiError(400, "'" + field + "' " + what, field);
}

// `tools` in the order the client wrote its keys (schemas are shown to the model with tojson).
ojson ordered_tools(const json& tools, const std::string* raw_body) {
  if (raw_body) {
    const ojson whole = ojson::parse(*raw_body, nullptr, false);
    if (whole.is_object() && whole.contains("tools") && whole["tools"].is_array()) return whole["tools"];
  }
  return ojson::parse(tools.dump());
}

ToolSpec tool_of(const ojson& t, size_t i) {
  const std::string at = "tools[" + std::to_string(i) + "]";
  if (!t.is_object()) refuse_tool_field(at, "must be an object {\"type\": \"function\", \"function\": {...}}");
  if (!t.contains("type") || !t["type"].is_string()) refuse_tool_field(at + ".type", "must be \"function\"");
  if (t["type"] != "function")
    refuse_tool_field(at + ".type", "'" + t["type"].get<std::string>() + "' is not supported (only \"function\" is)");
  if (!t.contains("function") || !t["function"].is_object())
    refuse_tool_field(at + ".function", "must be an object {name, description, parameters}");
  const ojson& f = t["function"];
  for (auto k = f.begin(); k != f.end(); ++k)
    if (k.key() != "name" && k.key() != "description" && k.key() != "parameters" && k.key() != "strict")
      refuse_tool_field(at + ".function." + k.key(), "is not supported (name, description, parameters and strict are)");
  ToolSpec spec;
  if (!f.contains("name") || !f["name"].is_string()) refuse_tool_field(at + ".function.name", "must be a string");
  spec.name = f["name"].get<std::string>();
  if (spec.name.empty() || spec.name.size() > 64 ||
      spec.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") != std::string::npos)
    refuse_tool_field(at + ".function.name", "must be 1 to 64 letters, digits, '_', '-' or '.', got " + ojson(spec.name).dump());
  if (f.contains("description") && !f["description"].is_null()) {
    if (!f["description"].is_string()) refuse_tool_field(at + ".function.description", "must be a string");
    spec.description = f["description"].get<std::string>();
  }
  if (f.contains("parameters") && !f["parameters"].is_null()) {
    if (!f["parameters"].is_object()) refuse_tool_field(at + ".function.parameters", "must be a JSON Schema object");
    spec.parameters = f["parameters"];
  }
  if (f.contains("strict") && !f["strict"].is_null() && !f["strict"].is_boolean())
    refuse_tool_field(at + ".function.strict", "must be true or false");
  return spec;
}

bool strict_tool(const ojson& t) { return t["function"].value("strict", ojson(false)) == true; }

}  // namespace

std::shared_ptr<const ToolRequest> tools_of_request(const json& body, const std::string* raw_body,
                                                    const std::string& template_source) {
  auto r = std::make_shared<ToolRequest>();
  const auto tools_it = body.find("tools");
  const bool has_tools = tools_it != body.end() && !tools_it->is_null();
  if (has_tools && !tools_it->is_array()) refuse_tool_field("tools", "must be a list of {\"type\": \"function\", \"function\": {...}}");
  if (has_tools) {
    if (tools_it->size() > 128) refuse_tool_field("tools", "may hold at most 128 functions");
    r->template_tools = ordered_tools(*tools_it, raw_body);
    std::set<std::string> names;
    for (size_t i = 0; i < r->template_tools.size(); ++i) {
      r->tools.push_back(tool_of(r->template_tools[i], i));
      if (!names.insert(r->tools.back().name).second)
        refuse_tool_field("tools[" + std::to_string(i) + "].function.name", "'" + r->tools.back().name + "' is named twice");
    }
  }
  if (auto it = body.find("tool_choice"); it != body.end() && !it->is_null()) {
    if (it->is_string()) {
      const std::string c = it->get<std::string>();
      if (c == "auto") r->choice = ToolRequest::Choice::Auto;
      else if (c == "none") r->choice = ToolRequest::Choice::None;
      else if (c == "required") r->choice = ToolRequest::Choice::Required;
      else
        refuse_tool_field("tool_choice", "must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", "
                                         "\"function\": {\"name\": ...}}, got " + it->dump());
    } else if (it->is_object()) {
      const json& c = *it;
      if (!c.contains("type") || c["type"] != "function")
        refuse_tool_field("tool_choice.type", "must be \"function\"" + (c.contains("type") ? ", got " + c["type"].dump() : std::string()));
      if (!c.contains("function") || !c["function"].is_object() || !c["function"].contains("name") ||
          !c["function"]["name"].is_string())
        refuse_tool_field("tool_choice.function.name", "must be a string");
      r->choice = ToolRequest::Choice::Named;
      r->named = c["function"]["name"].get<std::string>();
      bool found = false;
      for (const ToolSpec& t : r->tools) found = found || t.name == r->named;
      if (!found) refuse_tool_field("tool_choice.function.name", "'" + r->named + "' is not one of the functions in 'tools'");
    } else {
      refuse_tool_field("tool_choice", "must be a string or an object");
    }
  }
  if (auto it = body.find("parallel_tool_calls"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) refuse_tool_field("parallel_tool_calls", "must be true or false");
    r->parallel = it->get<bool>();
  }
  if (r->tools.empty()) {
    if (r->forces_calls()) refuse_tool_field("tool_choice", "asks for a call, but 'tools' offers no functions");
    return nullptr;
  }
  if (r->choice == ToolRequest::Choice::None) return r;
  r->syntax = tool_syntax_of_template(template_source);
  if (r->syntax == ToolSyntax::None)
    refuse_tool_field("tools", "cannot be offered to this model: its chat template shows no tool-call syntax this server "
                               "reads (pass a template with --chat-template, or leave 'tools' out)");
  if (r->choice == ToolRequest::Choice::Auto)
    for (size_t i = 0; i < r->template_tools.size(); ++i)
      if (strict_tool(r->template_tools[i]))
        refuse_tool_field("tools[" + std::to_string(i) + "].function.strict",
                          "true is kept only when tool_choice forces a call (\"required\" or a named function); with "
                          "\"auto\" the arguments are not constrained (leave it out or false)");
  return r;
}

void add_tool_history(const json& msg, const std::string& at, ToolSyntax syntax, ojson& out) {
  const std::string role = msg.value("role", "");
  if (auto it = msg.find("tool_calls"); it != msg.end() && !it->is_null()) {
    if (role != "assistant") refuse_tool_field(at + ".tool_calls", "belongs to assistant messages");
    if (!it->is_array()) refuse_tool_field(at + ".tool_calls", "must be a list");
    ojson calls = ojson::array();
    for (size_t j = 0; j < it->size(); ++j) {
      const json& c = (*it)[j];
      const std::string cat = at + ".tool_calls[" + std::to_string(j) + "]";
      if (!c.is_object() || !c.contains("function") || !c["function"].is_object())
        refuse_tool_field(cat, "must be {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}");
      if (c.contains("type") && c["type"] != "function") refuse_tool_field(cat + ".type", "must be \"function\"");
      const json& f = c["function"];
      if (!f.contains("name") || !f["name"].is_string()) refuse_tool_field(cat + ".function.name", "must be a string");
      ojson args = ojson::object();
      if (f.contains("arguments") && !f["arguments"].is_null()) {
        if (!f["arguments"].is_string()) refuse_tool_field(cat + ".function.arguments", "must be a string of JSON");
        const std::string text = f["arguments"].get<std::string>();
        args = ojson::parse(text, nullptr, false);
        if (!args.is_object()) refuse_tool_field(cat + ".function.arguments", "must be a JSON object, as a string");
        // DeepSeek-R1's template joins the arguments into the prompt with '+': text there.
        if (syntax == ToolSyntax::DeepSeekR1) args = text;
      }
      ojson call = ojson::object();
      if (c.contains("id")) {
        if (!c["id"].is_string()) refuse_tool_field(cat + ".id", "must be a string");
        call["id"] = c["id"].get<std::string>();
      }
      call["type"] = "function";
      call["function"] = {{"name", f["name"].get<std::string>()}, {"arguments", args}};
      calls.push_back(std::move(call));
    }
    out["tool_calls"] = std::move(calls);
  }
  for (const char* key : {"tool_call_id", "name"})
    if (auto it = msg.find(key); it != msg.end() && !it->is_null()) {
      if (!it->is_string()) refuse_tool_field(at + "." + key, "must be a string");
      out[key] = it->get<std::string>();
    }
  if (role == "tool" && !out.contains("tool_call_id"))
    refuse_tool_field(at + ".tool_call_id", "is required in a tool message (the id of the call it answers)");
}

std::shared_ptr<grammar::TokenMasker> tool_grammar(const ToolRequest& t, const std::string& prompt_text,
                                                   const std::string& template_source,
                                                   std::shared_ptr<const grammar::VocabTrie> vocab, GrammarCache* cache) {
  if (!t.forces_calls()) return nullptr;
  std::vector<ToolSpec> allowed;
  for (const ToolSpec& s : t.tools)
    if (t.choice != ToolRequest::Choice::Named || s.name == t.named) allowed.push_back(s);
  ToolGrammarOptions opt;
  opt.parallel = t.parallel;
  // The reply may think first where the template knows <think>, unless the prompt has
  // already closed it (enable_thinking off) or opened it (the reply starts inside).
  size_t end = prompt_text.find_last_not_of(" \t\r\n");
  const std::string tail = end == std::string::npos ? "" : prompt_text.substr(0, end + 1);
  if (ReasoningSplit::prompt_opens_reasoning(prompt_text)) opt.reasoning = ToolGrammarOptions::Reasoning::Open;
  else if (!tail.ends_with("</think>") && template_source.find("<think>") != std::string::npos)
    opt.reasoning = ToolGrammarOptions::Reasoning::Optional;
  const std::string field = t.choice == ToolRequest::Choice::Named ? "tool_choice" : "tools";
  std::string gbnf;
  try {
    gbnf = tool_call_gbnf(t.syntax, allowed, opt);
  } catch (const Error& e) {
    refuse_tool_field(field, std::string("cannot be forced: ") + e.what());
  }
  return compile_grammar(gbnf, field, std::move(vocab), cache);
}

}  // namespace triattn::server
