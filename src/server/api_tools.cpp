#include "server/api_tools.h"

#include "chat/chat_prompt.h"
#include "server/api_error.h"
#include "server/api_fields.h"

namespace triattn::server {

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// The body's `tools` in the order the client wrote its keys (schemas are shown to the model
// as written).
ojson ordered_api_tools(const json& tools, const std::string* raw_body) {
  if (raw_body) {
    const ojson whole = ojson::parse(*raw_body, nullptr, false);
    if (whole.is_object() && whole.contains("tools") && whole["tools"].is_array()) return whole["tools"];
  }
  return ojson::parse(tools.dump());
}

// One API tool {type?, name, description, <schema>, ...} as chat's {type: function, function:
// {name, description, parameters, ...}}: `keys` are the tool's own fields (the type aside),
// `schema` the one that is chat's `parameters`.
ojson chat_tool_of(const ojson& t, const std::string& at, const std::vector<std::string>& keys, const std::string& schema) {
  if (!t.is_object()) refuse_field(at, "must be an object (a function tool)");
  ojson f = ojson::object();
  for (auto k = t.begin(); k != t.end(); ++k) {
    if (k.key() == "type") continue;
    bool known = false;
    for (const std::string& name : keys) known = known || name == k.key();
    if (!known) refuse_field(at + "." + k.key(), "is not a field of a function tool that this server supports (leave it out)");
    f[k.key() == schema ? "parameters" : k.key()] = *k;
  }
  return {{"type", "function"}, {"function", f}};
}

// The chat reader's error named by the API's field: tools[i].function.X is tools[i].X
// (parameters: `schema`), tool_choice.function.name is tool_choice.name.
ApiError api_tool_error(const ApiError& e, const std::string& schema, const std::string& parallel_field) {
  std::string p = e.param;
  if (p.rfind("tools[", 0) == 0) {
    if (const size_t at = p.find("].function"); at != std::string::npos) {
      std::string rest = p.substr(at + std::string("].function").size());
      if (rest == ".parameters") rest = "." + schema;
      p = p.substr(0, at + 1) + rest;
    }
  } else if (p == "tool_choice.function.name") {
    p = "tool_choice.name";
  } else if (p == "parallel_tool_calls") {
    p = parallel_field;
  }
  return p == e.param ? e : renamed_error(e, {{e.param, p}});
}

std::shared_ptr<const ToolRequest> read_chat_tools(const json& chat, const ojson& ordered_tools,
                                                   const std::string& template_source, const std::string& schema,
                                                   const std::string& parallel_field) {
  const std::string raw = ojson{{"tools", ordered_tools}}.dump();
  try {
    return tools_of_request(chat, &raw, template_source);
  } catch (const ApiError& e) {
    throw api_tool_error(e, schema, parallel_field);
  }
}

}  // namespace

std::shared_ptr<const ToolRequest> responses_tools(const json& body, const std::string* raw_body,
                                                   const std::string& template_source) {
  json chat = json::object();
  ojson tools = ojson::array();
  if (auto it = body.find("tools"); it != body.end() && !it->is_null()) {
    if (!it->is_array()) refuse_field("tools", "must be a list of function tools {\"type\": \"function\", \"name\", ...}");
    const ojson given = ordered_api_tools(*it, raw_body);
    for (size_t i = 0; i < given.size(); ++i) {
      const std::string at = "tools[" + std::to_string(i) + "]";
      const ojson& t = given[i];
      if (!t.is_object() || !t.contains("type") || !t["type"].is_string())
        refuse_field(at + ".type", "must be \"function\"");
      if (t["type"] != "function")
        refuse_field(at + ".type", "'" + t["type"].get<std::string>() +
                                       "' tools are not supported by this server (it runs no tools of its own; "
                                       "\"function\" tools are called by the client)");
      tools.push_back(chat_tool_of(t, at, {"name", "description", "parameters", "strict"}, "parameters"));
    }
    chat["tools"] = json::parse(tools.dump());
  }
  if (auto it = body.find("tool_choice"); it != body.end() && !it->is_null()) {
    if (it->is_object()) {
      const json& c = *it;
      if (!c.contains("type") || !c["type"].is_string()) refuse_field("tool_choice.type", "must be \"function\"");
      if (c["type"] != "function")
        refuse_field("tool_choice.type", "'" + c["type"].get<std::string>() +
                                             "' is not supported by this server (\"function\" with a 'name' is)");
      for (auto k = c.begin(); k != c.end(); ++k)
        if (k.key() != "type" && k.key() != "name") refuse_field("tool_choice." + k.key(), "is not a field of tool_choice");
      if (!c.contains("name") || !c["name"].is_string()) refuse_field("tool_choice.name", "must be a string");
      chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", c["name"]}}}};
    } else if (it->is_string()) {
      chat["tool_choice"] = *it;
    } else {
      refuse_field("tool_choice", "must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"name\"}");
    }
  }
  if (auto it = body.find("parallel_tool_calls"); it != body.end()) chat["parallel_tool_calls"] = *it;
  return read_chat_tools(chat, tools, template_source, "parameters", "parallel_tool_calls");
}

std::shared_ptr<const ToolRequest> messages_tools(const json& body, const std::string* raw_body,
                                                  const std::string& template_source) {
  json chat = json::object();
  ojson tools = ojson::array();
  if (auto it = body.find("tools"); it != body.end() && !it->is_null()) {
    if (!it->is_array()) refuse_field("tools", "must be a list of tools {name, description, input_schema}");
    const ojson given = ordered_api_tools(*it, raw_body);
    for (size_t i = 0; i < given.size(); ++i) {
      const std::string at = "tools[" + std::to_string(i) + "]";
      const ojson& t = given[i];
      // Client tools have no type or "custom"; the others (bash, web_search, ...) run on the server.
      if (t.is_object() && t.contains("type") && !t["type"].is_null() && t["type"] != "custom")
        refuse_field(at + ".type", (t["type"].is_string() ? "'" + t["type"].get<std::string>() + "'" : t["type"].dump()) +
                                       " tools are not supported by this server (it runs no tools of its own; "
                                       "client tools {name, description, input_schema} are)");
      tools.push_back(chat_tool_of(t, at, {"name", "description", "input_schema"}, "input_schema"));
    }
    chat["tools"] = json::parse(tools.dump());
  }
  if (auto it = body.find("tool_choice"); it != body.end() && !it->is_null()) {
    const json& c = *it;
    if (!c.is_object() || !c.contains("type") || !c["type"].is_string())
      refuse_field("tool_choice", "must be {\"type\": \"auto\" | \"any\" | \"tool\" | \"none\"}");
    const std::string type = c["type"].get<std::string>();
    for (auto k = c.begin(); k != c.end(); ++k)
      if (k.key() != "type" && k.key() != "disable_parallel_tool_use" && !(k.key() == "name" && type == "tool"))
        refuse_field("tool_choice." + k.key(), "is not a field of a '" + type + "' tool_choice");
    if (type == "auto") chat["tool_choice"] = "auto";
    else if (type == "any") chat["tool_choice"] = "required";
    else if (type == "none") chat["tool_choice"] = "none";
    else if (type == "tool") {
      if (!c.contains("name") || !c["name"].is_string()) refuse_field("tool_choice.name", "must be a string");
      chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", c["name"]}}}};
    } else {
      refuse_field("tool_choice.type", "must be \"auto\", \"any\", \"tool\" or \"none\", not '" + type + "'");
    }
    if (auto d = c.find("disable_parallel_tool_use"); d != c.end() && !d->is_null()) {
      if (!d->is_boolean()) refuse_field("tool_choice.disable_parallel_tool_use", "must be true or false");
      chat["parallel_tool_calls"] = !d->get<bool>();
    }
  }
  return read_chat_tools(chat, tools, template_source, "input_schema", "tool_choice.disable_parallel_tool_use");
}

ojson tool_template_kwargs(const ToolRequest* tools) {
  ojson kwargs = ojson::object();
  if (tools && tools->reads_calls()) kwargs["tools"] = tools->template_tools;
  return kwargs;
}

ojson tool_history_message(const std::string& role, const std::string& content, const std::vector<HistoryCall>& calls,
                           const std::string& tool_call_id, const std::string& at, ToolSyntax syntax) {
  json msg = {{"role", role}};
  if (!calls.empty()) {
    msg["tool_calls"] = json::array();
    for (const HistoryCall& c : calls)
      msg["tool_calls"].push_back(
          {{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  }
  if (!tool_call_id.empty()) msg["tool_call_id"] = tool_call_id;
  ojson out = chat_message(role, content);
  add_tool_history(msg, at, syntax, out);
  return out;
}

}  // namespace triattn::server
